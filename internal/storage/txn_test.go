package storage

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"kbroker/internal/record"
)

func txnBatch(pid int64, epoch int16, seq int32, n int, tag string) []byte {
	return testBatch{n: n, pid: pid, epoch: epoch, seq: seq, attrs: record.AttrTransactional, tag: tag}.build(nil)
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, commit bool, coordinatorEpoch int32) int64 {
	t.Helper()
	res, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit, CoordinatorEpoch: coordinatorEpoch}, testNow)
	if err != nil {
		t.Fatalf("marker for producer %d: %v", pid, err)
	}
	return res.BaseOffset
}

// committedView reads the log as a read_committed consumer does (Kafka's
// Java Fetcher and franz-go's aborter): up to the last stable offset, with
// the aborted transactions of each answer, skipping control batches and the
// batches of aborted transactions. It returns the offsets of the records
// the consumer would hand to the application.
func committedView(t testing.TB, l *Log) []int64 {
	t.Helper()
	var out []int64
	for off := l.LogStartOffset(); off < l.LastStableOffset(); {
		// Each answer's aborted transactions apply to its own batches.
		aborting := map[int64]bool{}
		res, err := l.ReadCommitted(off, 1<<20, true)
		if err != nil {
			t.Fatalf("read_committed at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("read_committed at %d below LSO %d returned nothing", off, l.LastStableOffset())
		}
		pending := slices.Clone(res.AbortedTxns)
		sort.Slice(pending, func(i, j int) bool { return pending[i].FirstOffset < pending[j].FirstOffset })
		b := res.Records
		for len(b) > 0 {
			h, _ := record.ParseHeader(b)
			raw := b[:h.Size]
			b = b[h.Size:]
			off = h.LastOffset + 1
			if h.ProducerID >= 0 {
				for len(pending) > 0 && pending[0].FirstOffset <= h.LastOffset {
					aborting[pending[0].ProducerID] = true
					pending = pending[1:]
				}
			}
			if h.IsControl() {
				if mk, ok, _ := record.ParseMarker(raw, &h); ok && !mk.Commit {
					delete(aborting, h.ProducerID)
				}
				continue
			}
			if h.IsTransactional() && aborting[h.ProducerID] {
				continue
			}
			for o := h.BaseOffset; o <= h.LastOffset; o++ {
				out = append(out, o)
			}
		}
	}
	return out
}

func offsets(from, n int64) []int64 {
	var out []int64
	for i := int64(0); i < n; i++ {
		out = append(out, from+i)
	}
	return out
}

func TestLastStableOffsetWithInterleavedProducers(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	mustAppend(t, l, txnBatch(1, 0, 0, 2, "a")) // 0-1: producer 1's transaction starts
	mustAppend(t, l, idem(3, 0, 0, 1))          // 2: idempotent, no transaction
	mustAppend(t, l, txnBatch(2, 0, 0, 2, "b")) // 3-4: producer 2's starts
	mustAppend(t, l, txnBatch(1, 0, 2, 1, "a")) // 5: producer 1's continues
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO with two open transactions = %d, want 0 (the first one's start)", got)
	}
	if res, err := l.ReadCommitted(0, 1<<20, true); err != nil || len(res.Records) != 0 {
		t.Fatalf("read_committed below an open transaction: %d bytes, %v", len(res.Records), err)
	}
	mustMarker(t, l, 1, 0, true, 0) // 6
	if got := l.LastStableOffset(); got != 3 {
		t.Fatalf("LSO after producer 1 committed = %d, want 3 (producer 2's start)", got)
	}
	if got := committedView(t, l); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("read_committed up to the LSO sees %v, want [0 1 2]", got)
	}
	mustAppend(t, l, idem(3, 0, 1, 1))        // 7
	abort := mustMarker(t, l, 2, 0, false, 0) // 8
	if l.LastStableOffset() != l.HighWatermark() || l.HighWatermark() != 9 {
		t.Fatalf("LSO %d, HW %d after both ended, want both 9", l.LastStableOffset(), l.HighWatermark())
	}
	want := []int64{0, 1, 2, 5, 7} // producer 2's 3-4 were aborted; markers are no records
	if got := committedView(t, l); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %v, want %v", got, want)
	}
	res, err := l.ReadCommitted(0, 1<<20, true)
	if err != nil || len(res.AbortedTxns) != 1 {
		t.Fatalf("aborted transactions of a read from 0: %+v, %v", res.AbortedTxns, err)
	}
	if a := res.AbortedTxns[0]; a.ProducerID != 2 || a.FirstOffset != 3 || a.LastOffset != abort || a.LastStableOffset != abort+1 {
		t.Fatalf("aborted transaction %+v, want producer 2 from 3, marker %d, LSO %d", a, abort, abort+1)
	}
	// A read past the aborted transaction's marker gets no entry.
	if res, _ := l.ReadCommitted(abort+1, 1<<20, true); len(res.AbortedTxns) != 0 {
		t.Fatalf("a read past the marker got %+v", res.AbortedTxns)
	}
	// The index file is Kafka's: one 34-byte entry.
	b, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.txnindex"))
	if err != nil || len(b) != 34 {
		t.Fatalf(".txnindex: %d bytes, %v", len(b), err)
	}
	if binary.BigEndian.Uint16(b) != 0 || binary.BigEndian.Uint64(b[2:]) != 2 || binary.BigEndian.Uint64(b[10:]) != 3 ||
		binary.BigEndian.Uint64(b[18:]) != uint64(abort) || binary.BigEndian.Uint64(b[26:]) != uint64(abort+1) {
		t.Fatalf(".txnindex entry %x", b)
	}
}

func TestAbortIndexEntryRecordsTheNextOpenTransaction(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	mustAppend(t, l, txnBatch(1, 0, 0, 1, "a")) // 0
	mustAppend(t, l, txnBatch(2, 0, 0, 1, "b")) // 1
	abort := mustMarker(t, l, 1, 0, false, 0)   // 2
	s := l.active()
	list, _ := s.txns()
	if len(list) != 1 || list[0].LastOffset != abort || list[0].LastStableOffset != 1 {
		t.Fatalf("entry %+v: its last stable offset is producer 2's open transaction at 1", list)
	}
}

func TestTransactionRefusals(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	const pid = 7
	mustAppend(t, l, txnBatch(pid, 3, 0, 2, "t"))
	if _, err := l.Append(idem(pid, 3, 2, 1), testNow); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside a transaction: %v, want INVALID_TXN_STATE", err)
	}
	mustMarker(t, l, pid, 3, true, 5)
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 3, Commit: false, CoordinatorEpoch: 4}, testNow); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator: %v, want TRANSACTION_COORDINATOR_FENCED", err)
	}
	if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 2, Commit: false, CoordinatorEpoch: 5}, testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an older producer epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// After the commit, the same epoch goes on with its sequence, in a new
	// transaction or without one.
	mustAppend(t, l, idem(pid, 3, 2, 1))
	mustAppend(t, l, txnBatch(pid, 3, 3, 1, "t"))
	// A coordinator that fenced the producer aborts with a bumped epoch.
	mustMarker(t, l, pid, 4, false, 5)
	if _, err := l.Append(txnBatch(pid, 3, 4, 1, "zombie"), testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("the fenced epoch writes again: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if _, err := l.Append(txnBatch(pid, 4, 5, 1, "t"), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("the bumped epoch not starting at 0: %v", err)
	}
	mustAppend(t, l, txnBatch(pid, 4, 0, 1, "t"))
	ps, _ := l.Producers()
	if len(ps) != 1 || ps[0].ProducerEpoch != 4 || ps[0].CoordinatorEpoch != 5 || ps[0].LastSequence != 0 || ps[0].CurrentTxnStartOffset != l.LogEndOffset()-1 {
		t.Fatalf("producers %+v", ps)
	}
	if l.LastStableOffset() != l.LogEndOffset()-1 {
		t.Fatalf("LSO %d, want the open transaction's start %d", l.LastStableOffset(), l.LogEndOffset()-1)
	}
}

func TestSnapshotHoldsOngoingTransactions(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	mustAppend(t, l, testBatch{n: 3}.build(t))
	mustAppend(t, l, txnBatch(1, 0, 0, 2, "open"))   // 3-4, stays open
	mustAppend(t, l, txnBatch(2, 1, 0, 1, "closed")) // 5
	mustMarker(t, l, 2, 1, false, 9)                 // 6
	before, _ := l.Producers()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if r := l2.Recovery(); r.SegmentsScanned != 0 {
		t.Fatalf("reopening after a clean close scanned %d segments", r.SegmentsScanned)
	}
	if got := l2.LastStableOffset(); got != 3 {
		t.Fatalf("LSO after reopening = %d, want 3: the open transaction came back from the snapshot", got)
	}
	after, _ := l2.Producers()
	if !slices.Equal(before, after) {
		t.Fatalf("producers before close %+v, after reopen %+v", before, after)
	}
	if _, err := l2.Append(idem(1, 0, 2, 1), testNow); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("the reopened transaction refuses a non-transactional batch: %v", err)
	}
	mustMarker(t, l2, 1, 0, true, 9)
	if l2.LastStableOffset() != l2.LogEndOffset() {
		t.Fatalf("LSO %d after the commit, want %d", l2.LastStableOffset(), l2.LogEndOffset())
	}
	// Kafka's snapshot layout: the entry of producer 1 names its
	// transaction's first offset, the last field.
	ps, _ := decodeSnapshot(l2.ps.encodeSnapshot())
	if ps.producers[1].txnFirst != -1 || ps.producers[2].coordinatorEpoch != 9 {
		t.Fatalf("snapshot round trip: %+v %+v", ps.producers[1], ps.producers[2])
	}
}

// txnModel is one transaction a test wrote.
type txnModel struct {
	pid    int64
	first  int64   // its first offset
	data   []int64 // its records' offsets
	marker int64   // -1: never ended
	commit bool
}

// writeTxnWorkload writes, over small segments, interleaved transactions of
// several producers that commit or abort at random, idempotent batches
// between them, and leaves some transactions open.
func writeTxnWorkload(t *testing.T, l *Log, rng *rand.Rand) (txns []*txnModel, plain []int64) {
	const producers = 4
	seq := make([]int32, producers+1)
	open := make([]*txnModel, producers+1)
	for i := 0; i < 120; i++ {
		pid := int64(1 + rng.Intn(producers))
		switch r := rng.Intn(10); {
		case r < 6:
			n := 1 + rng.Intn(3)
			res := mustAppend(t, l, txnBatch(pid, 0, seq[pid], n, "x"))
			seq[pid] += int32(n)
			if open[pid] == nil {
				open[pid] = &txnModel{pid: pid, first: res.BaseOffset, marker: -1}
				txns = append(txns, open[pid])
			}
			open[pid].data = append(open[pid].data, offsets(res.BaseOffset, int64(n))...)
		case r < 9 && open[pid] != nil:
			open[pid].commit = rng.Intn(2) == 0
			open[pid].marker = mustMarker(t, l, pid, 0, open[pid].commit, 0)
			open[pid] = nil
		default:
			res := mustAppend(t, l, testBatch{n: 1 + rng.Intn(2), valueSize: 40}.build(t))
			plain = append(plain, offsets(res.BaseOffset, res.LastOffset-res.BaseOffset+1)...)
		}
	}
	return txns, plain
}

// expectedView is what read_committed must show of a log cut at end: the
// plain records and those of committed transactions whose marker survived,
// below the first offset of a transaction whose marker did not.
func expectedView(txns []*txnModel, plain []int64, end int64) (view []int64, lso int64) {
	lso = end
	for _, x := range txns {
		if x.first < end && (x.marker < 0 || x.marker >= end) {
			lso = min(lso, x.first)
		}
	}
	for _, o := range plain {
		if o < lso {
			view = append(view, o)
		}
	}
	for _, x := range txns {
		// A committed transaction counts once its marker is in the log,
		// even past the LSO: it is decided.
		if x.commit && x.marker >= 0 && x.marker < end {
			for _, o := range x.data {
				if o < lso {
					view = append(view, o)
				}
			}
		}
	}
	sort.Slice(view, func(i, j int) bool { return view[i] < view[j] })
	return view, lso
}

// TestCrashAtAnyPointKeepsTransactionsWhole cuts the log at random points, as
// a kill -9 (or a lost page cache) leaves it, and checks that recovery gives
// read_committed consumers whole transactions only: the LSO stays at a
// transaction whose marker was lost until the coordinator aborts it, no
// aborted record is seen, and the state recovered with snapshots equals the
// one rebuilt from the log alone.
func TestCrashAtAnyPointKeepsTransactionsWhole(t *testing.T) {
	for iter := 0; iter < 12; iter++ {
		rng := rand.New(rand.NewSource(int64(iter)))
		cfg := smallConfig()
		l, dir := openTestLog(t, cfg)
		txns, plain := writeTxnWorkload(t, l, rng)
		crash(t, l)
		segs := segmentFiles(t, dir, ".log")
		// Cut one segment at a random byte and drop those after it.
		i := len(segs) - 1 - rng.Intn(min(3, len(segs)))
		st, _ := os.Stat(segs[i])
		if st.Size() > 0 {
			if err := os.Truncate(segs[i], rng.Int63n(st.Size())); err != nil {
				t.Fatal(err)
			}
		}
		for _, later := range segs[i+1:] {
			os.Remove(later)
		}
		l2, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		end := l2.LogEndOffset()
		view, lso := expectedView(txns, plain, end)
		if got := l2.LastStableOffset(); got != lso {
			t.Fatalf("iteration %d: LSO %d after a cut at %d, want %d", iter, got, end, lso)
		}
		if got := committedView(t, l2); !slices.Equal(got, view) {
			t.Fatalf("iteration %d: read_committed sees %v\nwant %v", iter, got, view)
		}
		withSnapshots, _ := l2.Producers()
		l2.Close()

		// The same log recovered without any snapshot or transaction index.
		os.Remove(filepath.Join(dir, cleanShutdownFile))
		removeSnapshots(dir)
		for _, p := range segmentFiles(t, dir, txnIndexSuffix) {
			os.Remove(p)
		}
		l3, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt, _ := l3.Producers()
		if l3.LastStableOffset() != lso || !slices.Equal(committedView(t, l3), view) {
			t.Fatalf("iteration %d: rebuilt from the log: LSO %d, want %d", iter, l3.LastStableOffset(), lso)
		}
		// Coordinator epochs and timestamps agree too; sequences may differ
		// only where the snapshot remembers a producer the log no longer has.
		for _, p := range rebuilt {
			j := slices.IndexFunc(withSnapshots, func(q ProducerInfo) bool { return q.ProducerID == p.ProducerID })
			if j < 0 || withSnapshots[j].CurrentTxnStartOffset != p.CurrentTxnStartOffset || withSnapshots[j].LastSequence != p.LastSequence {
				t.Fatalf("iteration %d: producer %+v rebuilt, %+v from snapshots", iter, p, withSnapshots)
			}
		}
		// The coordinator aborts what stayed open; the LSO moves on.
		for _, p := range rebuilt {
			if p.CurrentTxnStartOffset >= 0 {
				mustMarker(t, l3, p.ProducerID, p.ProducerEpoch, false, 0)
			}
		}
		if l3.LastStableOffset() != l3.LogEndOffset() {
			t.Fatalf("iteration %d: LSO %d after aborting the open transactions, log end %d", iter, l3.LastStableOffset(), l3.LogEndOffset())
		}
		l3.Close()
	}
}

func TestRetentionDeletesTxnIndexWithItsSegment(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	l, dir := openTestLog(t, cfg)
	mustAppend(t, l, txnBatch(1, 0, 0, 1, "a"))
	mustMarker(t, l, 1, 0, false, 0)
	for l.active().base == 0 {
		mustAppend(t, l, testBatch{n: 2, valueSize: 200}.build(t))
	}
	if len(segmentFiles(t, dir, txnIndexSuffix)) != 1 {
		t.Fatal("no .txnindex for the aborted transaction")
	}
	if _, err := l.EnforceRetention(testNow); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() == 0 || len(segmentFiles(t, dir, txnIndexSuffix)) != 0 {
		t.Fatalf("log start %d, .txnindex files %v", l.LogStartOffset(), segmentFiles(t, dir, txnIndexSuffix))
	}
}

func TestCleanerDropsAbortedRecordsKeepsMarkers(t *testing.T) {
	cfg := smallConfig()
	cfg.CleanupPolicy = CleanupPolicy{Compact: true}
	l, dir := openTestLog(t, cfg)
	// Committed "k" = v1, then an aborted overwrite of "k" that must not
	// hide it, then an aborted record of its own key.
	mustAppend(t, l, testBatch{recs: []kv{rec("k", "v1")}, pid: 1, epoch: 0, seq: 0, attrs: record.AttrTransactional}.build(t))
	mustMarker(t, l, 1, 0, true, 0)
	mustAppend(t, l, testBatch{recs: []kv{rec("k", "v2"), rec("gone", "x")}, pid: 1, epoch: 0, seq: 1, attrs: record.AttrTransactional}.build(t))
	abort := mustMarker(t, l, 1, 0, false, 0)
	mustAppend(t, l, testBatch{recs: []kv{rec("other", "y")}, pid: 2, epoch: 0, seq: 0}.build(t))
	// Producer 1 writes on, so that the aborted batch is not the last one
	// the cleaner keeps (empty) for its sequence.
	mustAppend(t, l, testBatch{recs: []kv{rec("later", "w")}, pid: 1, epoch: 0, seq: 3}.build(t))
	for l.active().base == 0 {
		mustAppend(t, l, testBatch{recs: []kv{rec("filler", "z")}}.build(t))
	}
	if _, err := l.Clean(testNow); err != nil {
		t.Fatal(err)
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	markers := 0
	for b := res.Records; len(b) > 0; {
		h, _ := record.ParseHeader(b)
		raw := b[:h.Size]
		b = b[h.Size:]
		if h.IsControl() {
			markers++
			continue
		}
		rr := record.NewReader(mustSection(t, raw, &h), h.NumRecords)
		var r record.Record
		for rr.Next(&r) {
			keys = append(keys, string(r.Key)+"="+string(r.Value))
		}
	}
	if !slices.Contains(keys, "k=v1") || slices.Contains(keys, "k=v2") || slices.Contains(keys, "gone=x") {
		t.Fatalf("cleaned log keeps %v: the committed k=v1, not the aborted records", keys)
	}
	if markers != 2 {
		t.Fatalf("%d markers after cleaning, want both kept", markers)
	}
	list, _ := l.segs[0].txns()
	if len(list) != 1 || list[0].LastOffset != abort {
		t.Fatalf("cleaned segment's aborted transactions %+v", list)
	}

	// Later rounds (new dirty data) find the aborted transaction with no
	// data left: its marker gets a delete horizon, and once
	// delete.retention.ms passed it goes, with its index entry. The commit
	// marker stays: k=v1 is still there.
	dirty := func() {
		base := l.active().base
		for l.active().base == base {
			mustAppend(t, l, testBatch{recs: []kv{rec("filler", "z")}}.build(t))
		}
	}
	dirty()
	if _, err := l.Clean(testNow); err != nil {
		t.Fatal(err)
	}
	later := testNow.Add(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	dirty()
	if _, err := l.Clean(later); err != nil {
		t.Fatal(err)
	}
	markers = 0
	res, _ = l.Read(0, 1<<20, true)
	for b := res.Records; len(b) > 0; {
		h, _ := record.ParseHeader(b)
		if h.IsControl() {
			markers++
			if mk, _, _ := record.ParseMarker(b[:h.Size], &h); !mk.Commit {
				t.Fatalf("the abort marker at %d outlived delete.retention.ms", h.BaseOffset)
			}
		}
		b = b[h.Size:]
	}
	if list, _ := l.segs[0].txns(); markers != 1 || len(list) != 0 {
		t.Fatalf("%d markers and index entries %+v after delete.retention.ms, want the commit marker alone", markers, list)
	}
	// The producer state rebuilt from the cleaned log has no transaction
	// left open by a marker the cleaner removed.
	end := l.LogEndOffset()
	l.Close()
	os.Remove(filepath.Join(dir, cleanShutdownFile))
	removeSnapshots(dir)
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LastStableOffset() != end {
		t.Fatalf("LSO %d after rebuilding from the cleaned log, want the log end %d", l2.LastStableOffset(), end)
	}
}

func mustSection(t *testing.T, raw []byte, h *record.BatchHeader) []byte {
	t.Helper()
	s, err := record.Section(raw, h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFollowerAppendTracksTransactions(t *testing.T) {
	leader, _ := openTestLog(t, smallConfig())
	mustAppend(t, leader, txnBatch(1, 0, 0, 2, "a"))
	mustMarker(t, leader, 1, 0, false, 3)
	mustAppend(t, leader, txnBatch(1, 0, 2, 1, "a"))
	res, _ := leader.Read(0, 1<<20, true)
	follower, _ := openTestLog(t, smallConfig())
	if _, err := follower.AppendAsFollower(res.Records, testNow); err != nil {
		t.Fatal(err)
	}
	if follower.LastStableOffset() != 3 {
		t.Fatalf("follower LSO %d, want 3", follower.LastStableOffset())
	}
	fr, _ := follower.ReadCommitted(0, 1<<20, true)
	if len(fr.AbortedTxns) != 1 || fr.AbortedTxns[0].FirstOffset != 0 {
		t.Fatalf("follower's aborted transactions %+v", fr.AbortedTxns)
	}
}

// FuzzTransactions runs a sequence of operations that data bytes describe
// (transactional and idempotent batches of three producers, commit and
// abort markers) against a log and a model of Kafka's rules, and checks the
// last stable offset and the read_committed view against the model: as
// written, after a clean reopen, and rebuilt from the log alone.
func FuzzTransactions(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x04, 0x05, 0x10, 0x08, 0x0d, 0x02, 0x0c})
	f.Add([]byte{0x00, 0x11, 0x21, 0x0c, 0x09, 0x06, 0x0a, 0x0e, 0x03, 0x07})
	f.Add([]byte("transactions interleaved and aborted at random"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 300 {
			data = data[:300]
		}
		cfg := smallConfig()
		dir := fuzzDir(t)
		l, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		type producer struct {
			seq   int32
			first int64 // -1: no open transaction
			data  []int64
		}
		ps := map[int64]*producer{1: {first: -1}, 2: {first: -1}, 3: {first: -1}}
		var visible []int64 // decided: plain records and committed transactions
		for _, b := range data {
			pid := int64(1 + b%3)
			p := ps[pid]
			n := 1 + int(b>>5)%2
			switch (b >> 2) % 4 {
			case 0: // transactional batch
				res, err := l.Append(txnBatch(pid, 0, p.seq, n, "t"), testNow)
				if err != nil {
					t.Fatalf("transactional batch: %v", err)
				}
				p.seq += int32(n)
				if p.first < 0 {
					p.first = res.BaseOffset
				}
				p.data = append(p.data, offsets(res.BaseOffset, int64(n))...)
			case 1, 2: // marker
				commit := (b>>2)%4 == 1
				mustMarker(t, l, pid, 0, commit, 0)
				if commit {
					visible = append(visible, p.data...)
				}
				p.first, p.data = -1, nil
			case 3: // idempotent batch
				res, err := l.Append(idem(pid, 0, p.seq, n), testNow)
				if p.first >= 0 {
					if !errors.Is(err, ErrInvalidTxnState) {
						t.Fatalf("non-transactional batch inside a transaction: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("idempotent batch: %v", err)
				}
				p.seq += int32(n)
				visible = append(visible, offsets(res.BaseOffset, int64(n))...)
			}
		}
		lso := l.LogEndOffset()
		for _, p := range ps {
			if p.first >= 0 {
				lso = min(lso, p.first)
			}
		}
		var want []int64
		for _, o := range visible {
			if o < lso {
				want = append(want, o)
			}
		}
		slices.Sort(want)
		check := func(l *Log, when string) {
			t.Helper()
			if got := l.LastStableOffset(); got != lso {
				t.Fatalf("%s: LSO %d, model %d", when, got, lso)
			}
			if got := committedView(t, l); !slices.Equal(got, want) {
				t.Fatalf("%s: read_committed sees %v, model %v", when, got, want)
			}
		}
		check(l, "as written")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		check(l2, "reopened")
		// A crash, and then every snapshot and transaction index lost: the
		// state is rebuilt from the log alone. (Losing only a sealed
		// segment's .txnindex, which is synced before the snapshot above it
		// is written, would look like a segment without aborts, in Kafka
		// too.)
		crash(t, l2)
		removeSnapshots(dir)
		for _, p := range segmentFiles(t, dir, txnIndexSuffix) {
			os.Remove(p)
		}
		l3, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer l3.Close()
		check(l3, "recovered")
	})
}

// A coordinator's transactional batch has no sequence (the group
// coordinator's TxnOffsetCommit): AppendAsCoordinator takes it, checks the
// epoch, and the marker ends its transaction; a client's such batch is
// refused.
func TestCoordinatorBatchesWithoutSequence(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	b := testBatch{n: 1, pid: 9, epoch: 2, seq: -1, attrs: record.AttrTransactional}
	if _, err := l.Append(b.build(t), testNow); !errors.Is(err, record.ErrInvalidRecord) {
		t.Fatalf("a client's producer batch without a sequence: %v", err)
	}
	res, err := l.AppendAsCoordinator(b.build(t), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsCoordinator(b.build(t), testNow); err != nil { // no duplicate detection without a sequence
		t.Fatal(err)
	}
	if l.LastStableOffset() != res.BaseOffset {
		t.Fatalf("LSO %d, want the coordinator's transaction at %d", l.LastStableOffset(), res.BaseOffset)
	}
	old := testBatch{n: 1, pid: 9, epoch: 1, seq: -1, attrs: record.AttrTransactional}
	if _, err := l.AppendAsCoordinator(old.build(t), testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("an older epoch: %v", err)
	}
	mustMarker(t, l, 9, 2, true, 0)
	if l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("LSO %d after the marker, log end %d", l.LastStableOffset(), l.LogEndOffset())
	}
	if ps, _ := l.Producers(); len(ps) != 1 || ps[0].LastSequence != -1 {
		t.Fatalf("producers %+v", ps)
	}
}

// Readers run beside the writer: a read_committed read never returns a
// record at or past the LSO, and every aborted batch it returns is covered
// by one of the aborted transactions it returns (run with -race).
func TestReadCommittedBesideAppendsAndMarkers(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	done := make(chan struct{})
	go func() {
		defer close(done)
		seq := int32(0)
		for i := 0; i < 300; i++ {
			if _, err := l.Append(txnBatch(1, 0, seq, 2, "r"), testNow); err != nil {
				t.Error(err)
				return
			}
			seq += 2
			if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: 1, Commit: i%3 != 0}, testNow); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		off := l.LogStartOffset()
		for off < l.LastStableOffset() {
			res, err := l.ReadCommitted(off, 4096, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) == 0 {
				break
			}
			last := lastOffsetOf(res.Records)
			if last >= l.LastStableOffset() {
				t.Fatalf("read_committed returned offset %d at or past the LSO", last)
			}
			for b := res.Records; len(b) > 0; {
				h, _ := record.ParseHeader(b)
				b = b[h.Size:]
				if h.IsControl() {
					continue
				}
				// Every third transaction (i%3 == 0) aborted: batch offsets 0, 9, 18, ...
				if aborted := (h.BaseOffset/3)%3 == 0; aborted && !slices.ContainsFunc(res.AbortedTxns, func(a AbortedTxn) bool {
					return a.FirstOffset == h.BaseOffset
				}) {
					t.Fatalf("aborted batch at %d returned without its aborted transaction (%+v)", h.BaseOffset, res.AbortedTxns)
				}
			}
			off = last + 1
		}
	}
}

// Retention may delete the segment an open transaction began in (the log
// start does not wait for the LSO, as in Kafka); the last stable offset is
// then the log start, never below it, as UnifiedLog clamps the first
// unstable offset: a read_committed consumer is never told to stop below
// the first offset it can fetch.
func TestLastStableOffsetNeverBelowLogStart(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 2 * cfg.SegmentBytes
	l, _ := openTestLog(t, cfg)
	mustAppend(t, l, txnBatch(1, 0, 0, 2, "a")) // 0-1: a transaction left open
	for seq := int32(0); l.Size() < 4*cfg.SegmentBytes; seq++ {
		mustAppend(t, l, idem(2, 0, seq, 1))
	}
	if n, err := l.EnforceRetention(testNow); err != nil || n == 0 || l.LogStartOffset() <= 1 {
		t.Fatalf("retention deleted %d segments (%v), log start %d: the test needs the open transaction's first segment gone", n, err, l.LogStartOffset())
	}
	if got, start := l.LastStableOffset(), l.LogStartOffset(); got != start {
		t.Fatalf("LSO %d with the open transaction's start (0) deleted, want the log start %d", got, start)
	}
}
