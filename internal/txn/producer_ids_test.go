package txn

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
)

// handedOut collects producer ids and fails the test on one handed out
// twice. Safe for concurrent use.
type handedOut struct {
	t    *testing.T
	mu   sync.Mutex
	seen map[int64]bool
}

func newHandedOut(t *testing.T) *handedOut { return &handedOut{t: t, seen: map[int64]bool{}} }

// take asks p for n ids.
func (h *handedOut) take(p *ProducerIDs, n int) {
	for range n {
		id, err := p.Next(context.Background())
		if err != nil {
			h.t.Error(err)
			return
		}
		h.mu.Lock()
		dup := id < 0 || h.seen[id]
		h.seen[id] = true
		h.mu.Unlock()
		if dup {
			h.t.Errorf("producer id %d handed out twice (or negative)", id)
			return
		}
	}
}

// openStore opens a metadata store over the backend that open returns.
func openStore(t *testing.T, open func() (meta.Backend, error)) *meta.Store {
	t.Helper()
	backend, err := open()
	if err != nil {
		t.Fatal(err)
	}
	store, err := meta.Open(backend, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// Ids are never handed out twice: not across the end of a reserved block,
// and not by a second allocator over the same store, which starts from a
// block of its own.
func TestProducerIDsAreUniqueAcrossBlocksAndAllocators(t *testing.T) {
	store := testkit.BoltStore(t)
	ids := newHandedOut(t)
	first := NewProducerIDs(store)
	ids.take(first, producerIDBlock+5) // into a second block
	second := NewProducerIDs(store)
	ids.take(second, 10)
	ids.take(first, 10)
}

// The single broker restarted: an allocator over the reopened bbolt file
// starts past every id handed out before, the rest of the last block
// included.
func TestProducerIDsAreUniqueAcrossAReopenedBoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ids := newHandedOut(t)
	for range 3 {
		store := openStore(t, func() (meta.Backend, error) { return meta.OpenBolt(path) })
		ids.take(NewProducerIDs(store), producerIDBlock/2)
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids.seen) != 3*producerIDBlock/2 {
		t.Fatalf("%d distinct ids, want %d", len(ids.seen), 3*producerIDBlock/2)
	}
}

// Two brokers of one etcd, each with its own store and allocator, asking
// for ids at the same time (their block reservations race in etcd's
// compare-and-swap), never hand out the same id; nor does a broker that
// restarts (a new store over the same etcd).
func TestProducerIDsAreUniqueAcrossBrokersOfOneEtcdAndRestarts(t *testing.T) {
	e := etcdtest.Start(t)
	open := func() *meta.Store {
		t.Helper()
		return openStore(t, func() (meta.Backend, error) {
			return meta.OpenEtcd(testkit.Context(t, 30*time.Second), meta.EtcdOptions{Endpoints: []string{e.Endpoint()}})
		})
	}
	ids := newHandedOut(t)
	var wg sync.WaitGroup
	stores := []*meta.Store{open(), open()}
	for _, store := range stores {
		// Several goroutines per broker, as concurrent InitProducerId
		// requests: they share the broker's allocator.
		p := NewProducerIDs(store)
		for range 4 {
			wg.Go(func() { ids.take(p, producerIDBlock/2+7) })
		}
	}
	wg.Wait()
	for _, store := range stores {
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	restarted := open()
	defer restarted.Close()
	ids.take(NewProducerIDs(restarted), 10)
	if want := 2*4*(producerIDBlock/2+7) + 10; len(ids.seen) != want {
		t.Fatalf("%d distinct ids, want %d", len(ids.seen), want)
	}
}
