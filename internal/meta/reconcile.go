package meta

import (
	"slices"
	"sync"
)

// Reconcilers. A reaction to a metadata change that may take long (a log
// truncated after a leader change, a coordinator replaying its partition's
// log when it takes the partition over) must not hold up the store's
// goroutine, or every writer would wait for it. A reconciler runs on a
// goroutine of its own and is handed the newest state: changes that arrive
// while it works are coalesced into one event for its next call, so it
// never falls behind by more than one call however fast changes come.
// Update does not wait for reconcilers: what must be in effect when a write
// is acknowledged is a synchronous listener (OnChange).

// maxCoalescedChanges bounds the changes a lagging reconciler's pending
// event holds; past it the event becomes Full (compare the snapshots).
const maxCoalescedChanges = 100_000

type reconciler struct {
	fn   func(Event)
	wake chan struct{} // one pending signal at most

	mu      sync.Mutex
	pending *Event // nil: nothing new since the last call
	owned   bool   // pending's Changes and Delta are the reconciler's own
}

// Reconcile registers fn as a reconciler. fn is called on a goroutine of
// its own, never concurrently with itself, with an event from the last
// snapshot it was handed (Old) to the newest one (Cur): Changes and Delta
// cover every change between, and Full is set if a reload came between or
// too many changes piled up. Calls stop at Close, which waits for one
// running to return.
func (s *Store) Reconcile(fn func(Event)) {
	r := &reconciler{fn: fn, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.reconcilers = append(s.reconcilers, r)
	s.mu.Unlock()
	s.wg.Go(func() {
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-r.wake:
			}
			if ev, ok := r.take(); ok {
				r.fn(ev)
			}
		}
	})
}

// offer adds ev to the pending event and wakes the goroutine.
func (r *reconciler) offer(ev Event) {
	r.mu.Lock()
	switch p := r.pending; {
	case p == nil:
		r.pending, r.owned = &ev, false
	case p.Full || ev.Full || len(p.Changes)+len(ev.Changes) > maxCoalescedChanges:
		p.Cur, p.Full, p.Changes, p.Delta = ev.Cur, true, nil, nil
	default:
		p.Cur = ev.Cur
		if !r.owned {
			// The first event's slice and delta are shared with the
			// synchronous listeners: copy them once, then add in place.
			p.Changes = slices.Clone(p.Changes)
			p.Delta = p.delta().merged(&Delta{})
			r.owned = true
		}
		p.Changes = append(p.Changes, ev.Changes...)
		p.Delta.mergeFrom(ev.delta())
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reconciler) take() (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		return Event{}, false
	}
	ev := *r.pending
	r.pending = nil
	return ev, true
}
