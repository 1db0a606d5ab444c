package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
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
		off, tim, ok := s.readIndexFiles(s.size.Load(), s.lastOffset+1)
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

	// A clean reopen loads no sealed index: reads load them from their files,
	// within the budget. Closing forgets every segment.
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
		if _, _, ok := s.readIndexFiles(s.size.Load(), s.lastOffset+1); !ok {
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
		if _, _, ok := s.readIndexFiles(s.size.Load(), s.lastOffset+1); !ok {
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
	// Reopened, they pass Open's checks on their files' last entries.
	m := &modelLog{l: l}
	reopenModelLog(t, m, indexConfig())
	checkSealedUnread(t, m, -1)
	for _, s := range m.l.segs[:len(m.l.segs)-1] {
		if s.maxTs != -1 {
			t.Fatalf("reopened segment %d: max timestamp %d, want -1", s.base, s.maxTs)
		}
	}
	if got := readAll(t, m.l, 0, 1<<20); len(got) != 80 {
		t.Fatalf("read back %d records after reopening, want 80", len(got))
	}
}

// reopenModelLog closes m's log cleanly and opens it again with cfg.
func reopenModelLog(t *testing.T, m *modelLog, cfg Config) {
	t.Helper()
	if err := m.l.Close(); err != nil {
		t.Fatal(err)
	}
	openModelLog(t, m, cfg)
}

// openModelLog opens m's log directory again with cfg, as m's log.
func openModelLog(t *testing.T, m *modelLog, cfg Config) {
	t.Helper()
	l, err := Open(m.l.dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m.l = l
}

// checkSealedUnread checks that Open read neither the .log nor the whole
// index of m's sealed segments (but the one at scanned, if not -1, which it
// must have scanned): their indexes are unloaded and out of the budget.
func checkSealedUnread(t *testing.T, m *modelLog, scanned int64) {
	t.Helper()
	segs := m.l.segs
	for _, s := range segs[:len(segs)-1] {
		s.imu.RLock()
		loaded, unloaded := s.loaded, s.off == nil && s.tim == nil
		s.imu.RUnlock()
		if loaded || !unloaded || s.index.pos != notCached {
			t.Fatalf("sealed segment %d after Open: index loaded %v, entries held %v, budget position %d",
				s.base, loaded, !unloaded, s.index.pos)
		}
		if read := s.f != nil; read != (s.base == scanned) {
			t.Fatalf("sealed segment %d: .log read at Open %v, want %v", s.base, read, s.base == scanned)
		}
	}
}

// checkMaxTimestamps checks each sealed segment's largest timestamp (what
// retention.ms goes by) and its offset against what was written: with
// timestamps growing, the segment's last record, which ends its last batch.
func checkMaxTimestamps(t *testing.T, m *modelLog) {
	t.Helper()
	segs := m.l.segs
	for i, s := range segs[:len(segs)-1] {
		last := segs[i+1].base - 1
		s.imu.RLock()
		maxTsOff := s.maxTsOff
		s.imu.RUnlock()
		if got := s.largestTimestamp(); got != m.recs[last].ts || maxTsOff != last {
			t.Fatalf("segment %d: largest timestamp %d at offset %d, wrote %d at %d", s.base, got, maxTsOff, m.recs[last].ts, last)
		}
	}
}

// checkModel reads every record of m back, one batch at a time and whole,
// and looks up every timestamp from before the first to after the last.
func checkModel(t *testing.T, m *modelLog) {
	t.Helper()
	for off := range int64(len(m.recs)) {
		if err := m.checkReadAt(t, off); err != nil {
			t.Fatal(err)
		}
	}
	if got := readAll(t, m.l, 0, 1<<20); !slices.Equal(got, m.recs) {
		t.Fatalf("reading the whole log returned %d records, %d written, or different ones", len(got), len(m.recs))
	}
	for ts := m.recs[0].ts - 1; ts <= m.recs[len(m.recs)-1].ts+1; ts++ {
		if err := m.checkTimestamp(ts); err != nil {
			t.Fatal(err)
		}
	}
}

// Open reads of each sealed segment below the producer snapshot only the last
// entries of its index files: the indexes are loaded by their first lookup.
func TestOpenLeavesSealedIndexesUnloaded(t *testing.T) {
	cfg := indexConfig()
	m := writeModelLog(t, cfg, "lazy", 300)
	if len(m.l.segs) < 10 {
		t.Fatalf("want many sealed segments, have %d", len(m.l.segs))
	}
	reopenModelLog(t, m, cfg)
	checkSealedUnread(t, m, -1)
	// Its largest timestamp is what loadSealedIndex takes from the whole files.
	for _, s := range m.l.segs[:len(m.l.segs)-1] {
		_, tim, ok := s.readIndexFiles(s.size.Load(), s.lastOffset+1)
		if !ok {
			t.Fatalf("segment %d: index files do not load", s.base)
		}
		if e := tim[len(tim)-1]; s.maxTs != e.ts || s.maxTsOff != s.base+int64(e.rel) {
			t.Fatalf("segment %d: max timestamp %d at %d, index files end with %+v", s.base, s.maxTs, s.maxTsOff, e)
		}
	}
	checkMaxTimestamps(t, m)
	if a := m.l.active(); !a.loaded || a.index.pos != notCached {
		t.Fatalf("active segment: index loaded %v, budget position %d", a.loaded, a.index.pos)
	}
	last := m.recs[len(m.recs)-1]
	if off, ts, err := m.l.MaxTimestamp(); err != nil || off != last.offset || ts != last.ts {
		t.Fatalf("MaxTimestamp = %d, %d, %v; want %d, %d", off, ts, err, last.offset, last.ts)
	}
	checkModel(t, m)
	checkIndexBudget(t, m)

	// Retention by time, right after Open, goes by the same timestamps, and
	// loads no index for it.
	cfg.RetentionMs = 1000
	reopenModelLog(t, m, cfg)
	const expired = 3
	now := m.recs[m.l.segs[expired].base-1].ts + cfg.RetentionMs + 1
	if n, err := m.l.EnforceRetention(time.UnixMilli(now)); err != nil || n != expired {
		t.Fatalf("retention deleted %d segments (%v), want %d", n, err, expired)
	}
	checkSealedUnread(t, m, -1)
	for off := m.l.LogStartOffset(); off < int64(len(m.recs)); off++ {
		if err := m.checkReadAt(t, off); err != nil {
			t.Fatal(err)
		}
	}
}

// A sealed segment whose index files fail Open's checks on their last entries
// is scanned, as one whose files are missing, and reads as before.
func TestOpenScansSegmentWithDamagedIndexTail(t *testing.T) {
	cases := []struct {
		name, ext string
		damage    func(b []byte, span, logSize int64) []byte
	}{
		{"time index not whole entries", ".timeindex", func(b []byte, _, _ int64) []byte {
			return b[:len(b)-5]
		}},
		{"time index empty", ".timeindex", func(b []byte, _, _ int64) []byte {
			return nil
		}},
		{"last time entry past the segment", ".timeindex", func(b []byte, span, _ int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-4:], uint32(span))
			return b
		}},
		{"last time entry before the segment", ".timeindex", func(b []byte, _, _ int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-4:], uint32(0xffffffff))
			return b
		}},
		{"last offset entry past the .log", ".index", func(b []byte, _, logSize int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-4:], uint32(logSize))
			return b
		}},
		{"last offset entry past the segment", ".index", func(b []byte, span, _ int64) []byte {
			binary.BigEndian.PutUint32(b[len(b)-8:], uint32(span))
			return b
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := indexConfig()
			m := writeModelLog(t, cfg, "damaged", 150)
			if len(m.l.segs) < 5 {
				t.Fatalf("want several sealed segments, have %d", len(m.l.segs))
			}
			s, next := m.l.segs[2], m.l.segs[3].base
			if err := m.l.Close(); err != nil {
				t.Fatal(err)
			}
			path := s.path + c.ext
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.damage(b, next-s.base, s.size.Load()), 0o644); err != nil {
				t.Fatal(err)
			}
			openModelLog(t, m, cfg)
			checkSealedUnread(t, m, s.base)
			// Open rewrote the damaged files, before any lookup.
			s = m.l.segs[2]
			if _, tim, ok := s.readIndexFiles(s.size.Load(), next); !ok || tim[len(tim)-1].ts != s.maxTs {
				t.Fatalf("segment %d's index files after Open: ok %v", s.base, ok)
			}
			checkMaxTimestamps(t, m)
			checkModel(t, m)
			// So the next Open takes every sealed segment from its files.
			if err := m.l.Close(); err != nil {
				t.Fatal(err)
			}
			openModelLog(t, m, cfg)
			checkSealedUnread(t, m, -1)
			checkMaxTimestamps(t, m)
			checkModel(t, m)
		})
	}
}
