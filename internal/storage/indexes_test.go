package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// withIndexBudget lowers the process-wide budget for sealed segments' indexes
// for one test.
func withIndexBudget(t *testing.T, n int64) {
	t.Helper()
	old := indexes.setMax(n)
	t.Cleanup(func() { indexes.setMax(old) })
}

// indexConfig makes small segments with an offset and time index entry for
// nearly every batch.
func indexConfig() Config {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 64
	return cfg
}

// modelLog is a log together with every record written to it, by offset.
type modelLog struct {
	l    *Log
	recs []readRecord
}

// writeModelLog appends batches of two records, timestamps growing by 10 ms
// a batch and 3 ms a record, so that every record has its own timestamp.
func writeModelLog(t *testing.T, cfg Config, name string, batches int) *modelLog {
	t.Helper()
	l, _ := openTestLog(t, cfg)
	m := &modelLog{l: l}
	for i := range batches {
		tb := testBatch{n: 2, valueSize: 80, tag: fmt.Sprintf("%s-%d", name, i),
			firstTs: testNow.UnixMilli() + 10*int64(i), tsStep: 3}
		res := mustAppend(t, l, tb.build(t))
		for j := range tb.n {
			m.recs = append(m.recs, readRecord{offset: res.BaseOffset + int64(j), ts: tb.firstTs + int64(j)*tb.tsStep,
				key: fmt.Sprintf("k%d", j), value: string(value(tb.tag, j, tb.valueSize))})
		}
	}
	l.sealing.Wait()
	return m
}

// checkReadAt reads the batch holding off and compares it with the model.
// Undecodable bytes fail t (from any goroutine, as the other concurrent read
// tests do).
func (m *modelLog) checkReadAt(t testing.TB, off int64) error {
	res, err := m.l.Read(off, 1, true)
	if err != nil {
		return fmt.Errorf("read at %d: %v", off, err)
	}
	got := decodeBatches(t, res.Records)
	if len(got) == 0 || got[0].offset > off || got[len(got)-1].offset < off {
		return fmt.Errorf("read at %d returned offsets %v", off, offsetsOf(got))
	}
	for _, r := range got {
		if r != m.recs[r.offset] {
			return fmt.Errorf("read at %d: got %+v, wrote %+v", off, r, m.recs[r.offset])
		}
	}
	return nil
}

// checkTimestamp checks OffsetForTimestamp(ts) against the model: the first
// record with a timestamp at or after ts.
func (m *modelLog) checkTimestamp(ts int64) error {
	off, rts, ok, err := m.l.OffsetForTimestamp(ts)
	i := slices.IndexFunc(m.recs, func(r readRecord) bool { return r.ts >= ts })
	switch {
	case err != nil:
		return fmt.Errorf("OffsetForTimestamp(%d): %v", ts, err)
	case i < 0 && ok:
		return fmt.Errorf("OffsetForTimestamp(%d) = %d, want none", ts, off)
	case i >= 0 && (!ok || off != m.recs[i].offset || rts != m.recs[i].ts):
		return fmt.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d", ts, off, rts, ok, m.recs[i].offset, m.recs[i].ts)
	}
	return nil
}

func offsetsOf(rs []readRecord) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.offset)
	}
	return out
}

// checkIndexBudget checks the budget's books while no lookup runs: every
// cached index is loaded, sealed (not an active segment of logs) and counted
// at its weight, the total is their sum and within the budget.
func checkIndexBudget(t *testing.T, logs ...*modelLog) {
	t.Helper()
	for _, m := range logs {
		if a := m.l.active(); a.index.pos != notCached {
			t.Fatalf("active segment %d is under the budget (pos %d)", a.base, a.index.pos)
		}
	}
	indexes.mu.Lock()
	defer indexes.mu.Unlock()
	var sum int64
	for i, e := range indexes.ents {
		s := e.seg
		if e.pos != i {
			t.Fatalf("entry %d says it is at %d", i, e.pos)
		}
		if !s.imu.TryRLock() {
			t.Fatalf("segment %d's index is in use with no lookup running", s.base)
		}
		loaded, w := s.loaded, s.indexWeight()
		s.imu.RUnlock()
		if !loaded || w != e.weight {
			t.Fatalf("segment %d: cached with weight %d, loaded %v weight %d", s.base, e.weight, loaded, w)
		}
		sum += w
	}
	if sum != indexes.total {
		t.Fatalf("budget counts %d bytes, its entries weigh %d", indexes.total, sum)
	}
	if indexes.total > indexes.max {
		t.Fatalf("%d bytes of indexes loaded, budget %d", indexes.total, indexes.max)
	}
}

// checkSealedIndexFiles checks that every sealed segment's index files hold
// its whole index (an entry for every batch but the first, at this interval),
// as they would not had an active segment's index been unloaded before sealing.
func checkSealedIndexFiles(t *testing.T, m *modelLog) {
	t.Helper()
	segs := m.l.segs
	for i, s := range segs[:len(segs)-1] {
		off, tim, ok := s.readIndexFiles(s.size.Load())
		batches := int(segs[i+1].base-s.base) / 2
		if !ok || len(off) != batches-1 || tim[len(tim)-1].ts != s.maxTs {
			t.Fatalf("segment %d (%d batches): index files ok %v, %d offset entries, %d time entries", s.base, batches, ok, len(off), len(tim))
		}
	}
}

func TestIndexBudgetBoundsLoadedIndexes(t *testing.T) {
	const budget = 1500 // a few segments' indexes (some 300-400 bytes each)
	withIndexBudget(t, budget)
	var logs []*modelLog
	for i := range 3 {
		logs = append(logs, writeModelLog(t, indexConfig(), fmt.Sprint("log", i), 300))
	}
	sealed, loaded := 0, 0
	for _, m := range logs {
		checkSealedIndexFiles(t, m)
		for _, s := range m.l.segs[:len(m.l.segs)-1] {
			sealed++
			s.imu.RLock()
			if s.loaded {
				loaded++
			}
			s.imu.RUnlock()
		}
	}
	if sealed < 40 || loaded*4 > sealed {
		t.Fatalf("%d of %d sealed segments' indexes loaded", loaded, sealed)
	}
	checkIndexBudget(t, logs...)

	for _, m := range logs {
		for off := range int64(len(m.recs)) {
			if err := m.checkReadAt(t, off); err != nil {
				t.Fatal(err)
			}
			checkIndexBudget(t, logs...)
			// The index that served the read is still loaded: evictions take
			// the least recently used.
			s := m.l.segs[(&view{segs: m.l.segs}).segmentFor(off)]
			s.imu.RLock()
			ok := s.loaded && len(s.off) > 0
			s.imu.RUnlock()
			if !ok {
				t.Fatalf("offset %d: segment %d's index was unloaded right after serving a read", off, s.base)
			}
		}
		if got := readAll(t, m.l, 0, 700); !slices.Equal(got, m.recs) {
			t.Fatalf("reading the whole log returned %d records, %d written, or different ones", len(got), len(m.recs))
		}
		for ts := testNow.UnixMilli() - 1; ts <= m.recs[len(m.recs)-1].ts+1; ts++ {
			if err := m.checkTimestamp(ts); err != nil {
				t.Fatal(err)
			}
		}
		checkIndexBudget(t, logs...)
	}

	// A clean reopen loads sealed indexes from their files, within the budget;
	// closing forgets every segment.
	for i, m := range logs {
		old := m.l.segs
		if err := m.l.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range old {
			if s.index.pos != forgotten {
				t.Fatalf("closed segment %d still known to the budget (pos %d)", s.base, s.index.pos)
			}
		}
		l, err := Open(m.l.dir, indexConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs[i].l = l
		checkIndexBudget(t, logs...)
	}
	for _, m := range logs {
		if got := readAll(t, m.l, 0, 1); !slices.Equal(got, m.recs) {
			t.Fatalf("reading the reopened log returned %d records, %d written, or different ones", len(got), len(m.recs))
		}
		if err := m.checkTimestamp(m.recs[len(m.recs)/3].ts - 1); err != nil {
			t.Fatal(err)
		}
		checkIndexBudget(t, logs...)
	}
}

func TestCompactionUnderTinyIndexBudget(t *testing.T) {
	withIndexBudget(t, 1) // every sealed index is unloaded as soon as it is not in use
	l, _ := openTestLog(t, compactConfig())
	written := appendKeyed(t, l, 200, 7)
	l.sealing.Wait()
	active := l.active()
	hwm := l.HighWatermark()
	if res := mustClean(t, l, testNow); res.SegmentsCleaned == 0 {
		t.Fatal("nothing cleaned")
	}
	want := wantCompacted(written, active.base, hwm)
	checkRecords(t, records(readBatches(t, l)), written, want)
	// The cleaned segments' indexes were given to the budget once their files
	// had their final names, and read back from them.
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.index.pos == forgotten {
			t.Fatalf("cleaned segment %d is not under the budget", s.base)
		}
		if _, _, ok := s.readIndexFiles(s.size.Load()); !ok {
			t.Fatalf("cleaned segment %d's index files do not hold its index", s.base)
		}
	}
	checkRecords(t, records(readBatches(t, l)), written, want)
	if n := indexes.weight(); n > 1 {
		t.Fatalf("%d bytes of sealed indexes loaded with a budget of 1", n)
	}
}

func TestConcurrentReadersWhileIndexesAreEvicted(t *testing.T) {
	// A budget of one or two segments' indexes, and one so small that every
	// index is unloaded as soon as its lookup is done.
	for _, budget := range []int64{700, 1} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) { testConcurrentReadersWhileIndexesAreEvicted(t, budget) })
	}
}

func testConcurrentReadersWhileIndexesAreEvicted(t *testing.T, budget int64) {
	withIndexBudget(t, budget)
	var logs []*modelLog
	for i := range 2 {
		logs = append(logs, writeModelLog(t, indexConfig(), fmt.Sprint("log", i), 200))
	}
	// Meanwhile a third log rolls (sealed indexes join the budget), retention
	// deletes (closed ones leave it) and the cleaner swaps segments in.
	cfg := compactConfig()
	cfg.CleanupPolicy.Delete = true
	cfg.RetentionBytes = 20000
	churn, _ := openTestLog(t, cfg)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range 600 {
				m := logs[rng.IntN(len(logs))]
				var err error
				if rng.IntN(4) == 0 {
					err = m.checkTimestamp(m.recs[rng.IntN(len(m.recs))].ts - int64(rng.IntN(5)))
				} else {
					err = m.checkReadAt(t, int64(rng.IntN(len(m.recs))))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 300 {
			r := rec(fmt.Sprintf("k%d", i%10), fmt.Sprintf("v%d", i))
			if _, err := churn.Append(testBatch{recs: []kv{r}, valueSize: 100}.build(t), testNow); err != nil {
				errs <- err
				return
			}
			if i%25 == 0 {
				if _, err := churn.EnforceRetention(testNow); err != nil {
					errs <- err
					return
				}
				if _, err := churn.Clean(testNow); err != nil && !errors.Is(err, errCleaningAborted) {
					errs <- err
					return
				}
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	churn.sealing.Wait()
	// An eviction that found an index read-locked for its maxTs (retention,
	// OffsetForTimestamp skipping segments) leaves the bound to the next trim.
	indexes.trim()
	checkIndexBudget(t, logs...)
	for _, m := range logs {
		if got := readAll(t, m.l, 0, 500); !slices.Equal(got, m.recs) {
			t.Fatalf("reading the whole log returned %d records, %d written, or different ones", len(got), len(m.recs))
		}
	}
}

func TestConcurrentReadersDuringAppendsAndRetentionWithTinyIndexBudget(t *testing.T) {
	withIndexBudget(t, 1)
	testConcurrentReadersDuringAppendsAndRetention(t)
}

// A segment whose batches carry no timestamp (-1, as old producers send)
// is sealed with index files that load as they are: otherwise the budget's
// every unload would cost a rescan of the segment's .log.
func TestSealedSegmentWithoutTimestampsLoadsFromItsFiles(t *testing.T) {
	l, _ := openTestLog(t, indexConfig())
	for i := range 40 {
		mustAppend(t, l, testBatch{n: 2, valueSize: 80, tag: fmt.Sprint("nots-", i), firstTs: -1, maxTs: -1}.build(t))
	}
	l.sealing.Wait()
	segs := l.segs
	if len(segs) < 2 {
		t.Fatalf("want rolled segments, have %d", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		if _, _, ok := s.readIndexFiles(s.size.Load()); !ok {
			t.Fatalf("sealed segment %d: index files do not load", s.base)
		}
		if s.maxTs != -1 {
			t.Fatalf("segment %d: max timestamp %d, want -1", s.base, s.maxTs)
		}
	}
	if got := readAll(t, l, 0, 1<<20); len(got) != 80 {
		t.Fatalf("read back %d records, want 80", len(got))
	}
	if _, _, ok, err := l.OffsetForTimestamp(0); err != nil || ok {
		t.Fatalf("OffsetForTimestamp(0) over untimed records: ok %v err %v, want none", ok, err)
	}
}
