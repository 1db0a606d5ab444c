package meta

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Store keeps the current Snapshot of a Backend and applies every committed
// change to it, whichever broker made the change.
type Store struct {
	backend Backend
	log     *slog.Logger
	snap    atomic.Pointer[Snapshot]

	mu      sync.Mutex
	applied *sync.Cond // signalled whenever appliedRev advances
	// appliedRev is the revision whose synchronous listeners (OnChange)
	// have all run: a writer waits for it, so when an admin call returns
	// its change is in effect (for example, partition logs already use a
	// new topic config). Reconcilers may still be catching up.
	appliedRev  int64
	listeners   []func(Event)
	reconcilers []*reconciler // reconcile.go

	sync syncState // sync.go

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup // the reconcilers' goroutines
}

// Open loads everything from the backend and starts following its changes.
func Open(backend Backend, log *slog.Logger) (*Store, error) {
	s := &Store{backend: backend, log: log, done: make(chan struct{})}
	s.applied = sync.NewCond(&s.mu)
	rev, err := s.reload(context.Background())
	if err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.follow(s.ctx, rev)
	return s, nil
}

// Snapshot returns the current view. It is immutable and safe to hold.
func (s *Store) Snapshot() *Snapshot { return s.snap.Load() }

// Event tells a listener what changed: the snapshots before and after, the
// changed keys, and what they changed, decoded (Delta). Full is set after a
// reload, when the changes are not known and the listener must compare the
// snapshots itself; Changes and Delta are then empty.
type Event struct {
	Old, Cur *Snapshot
	Changes  []Change
	Delta    *Delta
	Full     bool
}

func (e Event) delta() *Delta {
	if e.Delta == nil {
		return &Delta{}
	}
	return e.Delta
}

// ChangedTopics lists the topics whose metadata (topics/<name>) changed.
func (e Event) ChangedTopics() []string { return keysOf(e.delta().Topics) }

// ChangedTopicConfigs lists the topics whose config overrides changed.
func (e Event) ChangedTopicConfigs() []string { return keysOf(e.delta().Configs.Topics) }

// BrokerConfigsChanged reports whether any dynamic broker config changed.
func (e Event) BrokerConfigsChanged() bool { return len(e.delta().Configs.Brokers) > 0 }

func keysOf[M ~map[K]V, K comparable, V any](m M) []K {
	if len(m) == 0 {
		return nil
	}
	return slices.Collect(maps.Keys(m))
}

// OnChange registers fn as a synchronous listener: it runs after each new
// snapshot is installed, in order, on the store's goroutine, and a writer's
// Update returns only once it has run. It is for reactions that must be in
// effect when the write is acknowledged (a deleted topic's logs are gone
// before DeleteTopics answers, a new ACL is enforced before CreateAcls
// answers), so it must not block for long: a slow reaction is a reconciler
// (Reconcile).
func (s *Store) OnChange(fn func(Event)) {
	s.mu.Lock()
	s.listeners = append(s.listeners, fn)
	s.mu.Unlock()
}

// Update runs fn in one backend transaction and returns once this store's
// snapshot includes the change, so a caller reads its own writes.
func (s *Store) Update(ctx context.Context, fn func(Tx) error) error {
	rev, err := s.backend.Update(ctx, fn)
	if err != nil || rev == 0 {
		return err
	}
	return s.waitFor(ctx, rev)
}

func (s *Store) waitFor(ctx context.Context, rev int64) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.applied.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.appliedRev < rev {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.applied.Wait()
	}
	return nil
}

// reload replaces the snapshot with a full read of the backend.
func (s *Store) reload(ctx context.Context) (int64, error) {
	kv, rev, err := s.backend.Load(ctx)
	if err != nil {
		return 0, err
	}
	b := Batch{Rev: rev}
	for k, v := range kv {
		b.Changes = append(b.Changes, Change{Key: k, Value: v})
	}
	snap, _, err := emptySnapshot().with(b)
	if err != nil {
		return 0, err
	}
	s.install(Event{Cur: snap, Full: true})
	return rev, nil
}

// install publishes ev.Cur: the synchronous listeners run, writers waiting
// for its revision are released, and the reconcilers are handed the event
// to catch up with on their own goroutines.
func (s *Store) install(ev Event) {
	s.mu.Lock()
	ev.Old = s.snap.Swap(ev.Cur)
	listeners, reconcilers := s.listeners, s.reconcilers
	s.mu.Unlock()
	if ev.Old != nil {
		for _, fn := range listeners {
			fn(ev)
		}
	}
	s.advance(ev.Cur.Rev)
	if ev.Old != nil {
		for _, r := range reconcilers {
			r.offer(ev)
		}
	}
}

// advance marks everything up to rev as applied and wakes the waiters.
func (s *Store) advance(rev int64) {
	s.mu.Lock()
	if rev > s.appliedRev {
		s.appliedRev = rev
	}
	s.applied.Broadcast()
	s.mu.Unlock()
}

// follow applies watched batches until ctx ends, reloading everything when
// the backend can no longer replay from our revision.
func (s *Store) follow(ctx context.Context, rev int64) {
	defer close(s.done)
	for ctx.Err() == nil {
		for ev := range s.backend.Watch(ctx, rev) {
			if ev.Err != nil {
				if errors.Is(ev.Err, ErrCompacted) {
					s.log.Warn("metadata watch fell behind; reloading", "rev", rev)
					if r, err := s.reload(ctx); err == nil {
						rev = r
					}
				} else {
					s.log.Warn("metadata watch failed; retrying", "err", ev.Err)
				}
				break
			}
			if ev.Batch.Rev <= rev {
				continue
			}
			if len(ev.Batch.Changes) == 0 {
				// Progress: nothing of ours changed up to this revision
				// (etcd revisions also count writes outside our prefix).
				s.advance(ev.Batch.Rev)
				rev = ev.Batch.Rev
				continue
			}
			next, delta, err := s.snap.Load().with(ev.Batch)
			if err != nil {
				s.log.Error("bad metadata change; reloading", "rev", ev.Batch.Rev, "err", err)
				if r, err := s.reload(ctx); err == nil {
					rev = r
				}
				break
			}
			s.install(Event{Cur: next, Changes: ev.Batch.Changes, Delta: delta})
			rev = ev.Batch.Rev
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops following changes, waits for a reconciler still running to
// return, and closes the backend.
func (s *Store) Close() error {
	s.cancel()
	<-s.done
	s.wg.Wait()
	return s.backend.Close()
}
