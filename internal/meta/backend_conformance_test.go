package meta

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// conformanceBackend is one Backend implementation under the shared suite.
type conformanceBackend struct {
	name string
	// open returns a new, empty backend, closed when the test ends.
	open func(t *testing.T) Backend
	// reopen closes b and opens the same stored data again, as a broker
	// restart does.
	reopen func(t *testing.T, b Backend) Backend
	// forget makes every revision up to the current one too old to replay.
	forget func(t *testing.T, b Backend)
}

func conformanceBackends(t *testing.T) []conformanceBackend {
	te := startEtcd(t)
	prefixes := 0
	return []conformanceBackend{
		{
			name: "bolt",
			open: func(t *testing.T) Backend {
				return openTestBolt(t, filepath.Join(t.TempDir(), "meta.db"))
			},
			reopen: func(t *testing.T, b Backend) Backend {
				path := b.(*Bolt).db.Path()
				b.Close()
				return openTestBolt(t, path)
			},
			forget: func(t *testing.T, b Backend) {
				// Bolt replays only its last historyLen batches.
				for i := range historyLen + 1 {
					mustUpdate(t, b, func(tx Tx) error { tx.Put("filler", []byte(fmt.Sprint(i))); return nil })
				}
			},
		},
		{
			name: "etcd",
			open: func(t *testing.T) Backend {
				prefixes++ // every test gets an empty keyspace in the one etcd
				return te.open(t, fmt.Sprintf("/conformance/%d/", prefixes))
			},
			reopen: func(t *testing.T, b Backend) Backend {
				prefix := b.(*Etcd).Prefix()
				b.Close()
				return te.open(t, prefix)
			},
			forget: func(t *testing.T, b Backend) {
				_, rev, err := b.Load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.(*Etcd).Client().Compact(context.Background(), rev); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
}

func openTestBolt(t *testing.T, path string) *Bolt {
	t.Helper()
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBackendConformance(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			for _, c := range conformanceCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, cb) })
			}
		})
	}
}

var conformanceCases = []struct {
	name string
	run  func(*testing.T, conformanceBackend)
}{
	{"LoadReturnsEveryKeyAfterWrites", testLoadAfterWrites},
	{"FailedTransactionWritesNothing", testFailedTransactionWritesNothing},
	{"TransactionReadsItsOwnWrites", testReadYourWrites},
	{"RevisionsIncreaseAndEmptyTransactionsHaveNone", testRevisionsIncrease},
	{"DeleteOfMissingKeyWritesNothing", testDeleteSemantics},
	{"ListReturnsOnlyThePrefix", testListByPrefix},
	{"ConcurrentReadModifyWritesLoseNothing", testConcurrentIncrements},
	{"WatchDeliversEveryBatchInOrder", testWatchInOrder},
	{"WatchFromForgottenRevisionIsCompacted", testWatchCompacted},
	{"WatchAfterReopenNeverSkipsBatches", testWatchAfterReopen},
}

func mustUpdate(t *testing.T, b Backend, fn func(Tx) error) int64 {
	t.Helper()
	rev, err := b.Update(context.Background(), fn)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func putAll(kv ...string) func(Tx) error {
	return func(tx Tx) error {
		for i := 0; i < len(kv); i += 2 {
			tx.Put(kv[i], []byte(kv[i+1]))
		}
		return nil
	}
}

func loadStrings(t *testing.T, b Backend) (map[string]string, int64) {
	t.Helper()
	kv, rev, err := b.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range kv {
		out[k] = string(v)
	}
	return out, rev
}

func wantLoad(t *testing.T, b Backend, want map[string]string) int64 {
	t.Helper()
	got, rev := loadStrings(t, b)
	if !maps.Equal(got, want) {
		t.Fatalf("Load = %v, want %v", got, want)
	}
	return rev
}

func testLoadAfterWrites(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	wantLoad(t, b, map[string]string{})
	mustUpdate(t, b, putAll("topics/a", "1", "config/topics/a", "{}"))
	last := mustUpdate(t, b, func(tx Tx) error {
		tx.Delete("topics/a")
		tx.Put("topics/b", []byte("2"))
		return nil
	})
	if rev := wantLoad(t, b, map[string]string{"config/topics/a": "{}", "topics/b": "2"}); rev < last {
		t.Fatalf("Load at revision %d, before the last commit %d", rev, last)
	}
	b = cb.reopen(t, b)
	wantLoad(t, b, map[string]string{"config/topics/a": "{}", "topics/b": "2"})
}

func testFailedTransactionWritesNothing(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	mustUpdate(t, b, putAll("k", "old"))
	boom := errors.New("boom")
	rev, err := b.Update(context.Background(), func(tx Tx) error {
		tx.Put("k", []byte("new"))
		tx.Put("other", []byte("x"))
		tx.Delete("k")
		return boom
	})
	if !errors.Is(err, boom) || rev != 0 {
		t.Fatalf("Update = %d, %v; want 0, the function's error", rev, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Update(ctx, putAll("other", "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a canceled context: %v", err)
	}
	wantLoad(t, b, map[string]string{"k": "old"})
}

func testReadYourWrites(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	mustUpdate(t, b, putAll("acls/a", "1", "acls/b", "2", "other/c", "3"))
	mustUpdate(t, b, func(tx Tx) error {
		check := func(key, want string, wantOK bool) {
			t.Helper()
			if v, ok := tx.Get(key); ok != wantOK || string(v) != want {
				t.Errorf("Get(%s) = %q, %v; want %q, %v", key, v, ok, want, wantOK)
			}
		}
		check("acls/a", "1", true)
		tx.Put("acls/a", []byte("9"))
		check("acls/a", "9", true)
		tx.Delete("acls/b")
		check("acls/b", "", false)
		tx.Put("acls/new", []byte("n"))
		tx.Put("tmp", []byte("x"))
		tx.Delete("tmp")
		check("tmp", "", false)
		got := map[string]string{}
		for k, v := range tx.List("acls/") {
			got[k] = string(v)
		}
		if want := map[string]string{"acls/a": "9", "acls/new": "n"}; !maps.Equal(got, want) {
			t.Errorf("List(acls/) = %v, want %v", got, want)
		}
		return nil
	})
	wantLoad(t, b, map[string]string{"acls/a": "9", "acls/new": "n", "other/c": "3"})
}

func testRevisionsIncrease(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	var prev int64
	for i := range 3 {
		rev := mustUpdate(t, b, putAll(fmt.Sprintf("k%d", i), "v"))
		if rev <= prev {
			t.Fatalf("commit %d at revision %d, after %d", i, rev, prev)
		}
		prev = rev
	}
	readOnly := mustUpdate(t, b, func(tx Tx) error { tx.Get("k0"); tx.List("k"); return nil })
	if readOnly != 0 {
		t.Fatalf("a transaction that wrote nothing returned revision %d", readOnly)
	}
	if _, rev := loadStrings(t, b); rev < prev {
		t.Fatalf("Load at %d after a commit at %d", rev, prev)
	}
	if rev := mustUpdate(t, b, putAll("k0", "w")); rev <= prev {
		t.Fatalf("commit after a read-only transaction at %d, after %d", rev, prev)
	}
}

func testDeleteSemantics(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	_, start := loadStrings(t, b)
	mustUpdate(t, b, putAll("d/x", "1"))
	if rev := mustUpdate(t, b, func(tx Tx) error { tx.Delete("d/missing"); return nil }); rev != 0 {
		t.Fatalf("deleting a missing key committed revision %d", rev)
	}
	del := mustUpdate(t, b, func(tx Tx) error { tx.Delete("d/x"); return nil })
	if del == 0 {
		t.Fatal("deleting a key committed nothing")
	}
	wantLoad(t, b, map[string]string{})
	mustUpdate(t, b, func(tx Tx) error {
		if _, ok := tx.Get("d/x"); ok {
			t.Error("deleted key still read")
		}
		return nil
	})
	batches := collectBatches(t, b.Watch(t.Context(), start), 2)
	want := Batch{Rev: del, Changes: []Change{{Key: "d/x", Deleted: true}}}
	if !sameBatch(batches[1], want) {
		t.Fatalf("watched %v, want %v", batches[1], want)
	}
}

func testListByPrefix(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	mustUpdate(t, b, putAll("topics/a", "1", "topics/b", "2", "topicsx/c", "3", "config/topics/a", "4", "topics/a%2Fb", "5"))
	mustUpdate(t, b, func(tx Tx) error {
		got := slices.Sorted(maps.Keys(tx.List("topics/")))
		if want := []string{"topics/a", "topics/a%2Fb", "topics/b"}; !slices.Equal(got, want) {
			t.Errorf("List(topics/) = %v, want %v", got, want)
		}
		if got := tx.List("none/"); len(got) != 0 {
			t.Errorf("List(none/) = %v", got)
		}
		if got := tx.List("config/"); len(got) != 1 || string(got["config/topics/a"]) != "4" {
			t.Errorf("List(config/) = %v", got)
		}
		return nil
	})
}

func testConcurrentIncrements(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	const workers, increments = 4, 10
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range increments {
				_, err := b.Update(context.Background(), func(tx Tx) error {
					n := 0
					if v, ok := tx.Get("n"); ok {
						n, _ = strconv.Atoi(string(v))
					}
					tx.Put("n", []byte(strconv.Itoa(n+1)))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wantLoad(t, b, map[string]string{"n": strconv.Itoa(workers * increments)})
}

func testWatchInOrder(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	_, start := loadStrings(t, b)
	var want []Batch
	for i := range 5 {
		var changes []Change
		rev := mustUpdate(t, b, func(tx Tx) error {
			changes = nil
			a, c := fmt.Sprintf("w/%d/a", i), fmt.Sprintf("w/%d/c", i)
			tx.Put(a, []byte("A"))
			tx.Put(c, []byte("C"))
			changes = append(changes, Change{Key: a, Value: []byte("A")}, Change{Key: c, Value: []byte("C")})
			if i > 0 {
				prev := fmt.Sprintf("w/%d/a", i-1)
				tx.Delete(prev)
				changes = append(changes, Change{Key: prev, Deleted: true})
			}
			return nil
		})
		want = append(want, Batch{Rev: rev, Changes: changes})
	}

	ctx := t.Context()
	from := b.Watch(ctx, start)
	checkBatches(t, collectBatches(t, from, len(want)), want)
	mid := b.Watch(ctx, want[2].Rev)
	checkBatches(t, collectBatches(t, mid, 2), want[3:])

	live := mustUpdate(t, b, putAll("w/live", "L"))
	wantLive := []Batch{{Rev: live, Changes: []Change{{Key: "w/live", Value: []byte("L")}}}}
	checkBatches(t, collectBatches(t, from, 1), wantLive)
	checkBatches(t, collectBatches(t, mid, 1), wantLive)
}

func testWatchCompacted(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	_, start := loadStrings(t, b)
	mustUpdate(t, b, putAll("a", "1"))
	mustUpdate(t, b, putAll("b", "2"))
	cb.forget(t, b)
	ev := nextEvent(t, b.Watch(t.Context(), start))
	if !errors.Is(ev.Err, ErrCompacted) {
		t.Fatalf("watch from a forgotten revision: %+v", ev)
	}
}

// A broker that restarts and watches from the revision it last applied must
// get every later batch or ErrCompacted, never a silent gap.
func testWatchAfterReopen(t *testing.T, cb conformanceBackend) {
	b := cb.open(t)
	_, start := loadStrings(t, b)
	first := mustUpdate(t, b, putAll("r/1", "1"))
	mustUpdate(t, b, putAll("r/2", "2"))
	b = cb.reopen(t, b)
	ch := b.Watch(t.Context(), start)
	mustUpdate(t, b, putAll("r/3", "3"))
	ev := nextEvent(t, ch)
	switch {
	case errors.Is(ev.Err, ErrCompacted):
	case ev.Err != nil:
		t.Fatalf("watch after reopen: %v", ev.Err)
	case ev.Batch.Rev != first:
		t.Fatalf("watch after reopen from %d started at revision %d, skipping %d", start, ev.Batch.Rev, first)
	}
}

func nextEvent(t *testing.T, ch <-chan WatchEvent) WatchEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	panic("unreachable")
}

func collectBatches(t *testing.T, ch <-chan WatchEvent, n int) []Batch {
	t.Helper()
	var out []Batch
	for len(out) < n {
		ev := nextEvent(t, ch)
		if ev.Err != nil {
			t.Fatalf("watch error after %d batches: %v", len(out), ev.Err)
		}
		out = append(out, ev.Batch)
	}
	return out
}

func checkBatches(t *testing.T, got, want []Batch) {
	t.Helper()
	for i := range want {
		if !sameBatch(got[i], want[i]) {
			t.Fatalf("batch %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func sameBatch(a, b Batch) bool {
	return a.Rev == b.Rev && slices.EqualFunc(a.Changes, b.Changes, func(x, y Change) bool {
		return x.Key == y.Key && x.Deleted == y.Deleted && string(x.Value) == string(y.Value) && (x.Value == nil) == x.Deleted
	})
}
