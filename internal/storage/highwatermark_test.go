package storage

import (
	"errors"
	"testing"
	"time"
)

func TestHighWatermarkIsTheLogEndUntilTheLogIsReplicated(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	mustAppend(t, l, testBatch{n: 3}.build(t))
	if l.HighWatermark() != 3 || l.LogEndOffset() != 3 {
		t.Fatalf("single replica: hwm %d, leo %d; want both 3", l.HighWatermark(), l.LogEndOffset())
	}

	l.SetReplicated(true)
	mustAppend(t, l, testBatch{n: 2}.build(t))
	if l.HighWatermark() != 3 || l.LogEndOffset() != 5 {
		t.Fatalf("replicated: hwm %d, leo %d; want 3 and 5", l.HighWatermark(), l.LogEndOffset())
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := offsetsOf(decodeBatches(t, res.Records)); len(got) != 3 || got[2] != 2 || res.HighWatermark != 3 {
		t.Fatalf("a consumer read past the high watermark: offsets %v, hwm %d", got, res.HighWatermark)
	}
	// Between the high watermark and the log end: nothing yet, and no error.
	if res, err := l.Read(3, 1<<20, true); err != nil || len(res.Records) != 0 {
		t.Fatalf("read at the high watermark: %d bytes, %v", len(res.Records), err)
	}
	if _, err := l.Read(6, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the log end: %v", err)
	}

	// Advancing the high watermark wakes a waiting fetch and exposes the batch.
	changed := l.Changed()
	if hw, err := l.SetHighWatermark(5); err != nil || hw != 5 {
		t.Fatalf("SetHighWatermark(5) = %d, %v", hw, err)
	}
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Fatal("advancing the high watermark woke no waiter")
	}
	if res, _ := l.Read(3, 1<<20, true); len(offsetsOf(decodeBatches(t, res.Records))) != 2 {
		t.Fatal("records below the new high watermark are not readable")
	}

	// Clamped to [log start, log end], as Kafka's updateHighWatermark.
	if hw, _ := l.SetHighWatermark(100); hw != 5 {
		t.Fatalf("high watermark past the log end: %d", hw)
	}
	if hw, _ := l.SetHighWatermark(-7); hw != 0 {
		t.Fatalf("high watermark below the log start: %d", hw)
	}

	// Back to a single replica: the high watermark catches up with the log end.
	l.SetReplicated(false)
	if l.HighWatermark() != 5 {
		t.Fatalf("after SetReplicated(false): hwm %d, want 5", l.HighWatermark())
	}
	mustAppend(t, l, testBatch{n: 1}.build(t))
	if l.HighWatermark() != 6 {
		t.Fatalf("append on a single replica: hwm %d, want 6", l.HighWatermark())
	}

	l.Close()
	if _, err := l.SetHighWatermark(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetHighWatermark on a closed log: %v", err)
	}
	l.SetReplicated(false) // must not wake (close) the closed log's channel again
}

// readUpTo reads with ReadUpTo from offset on, as a fetcher does (one read
// returns the batches of one segment), until a read returns nothing, and
// lists the offsets read.
func readUpTo(t *testing.T, l *Log, from, upTo int64) []int64 {
	t.Helper()
	var out []int64
	for {
		res, err := l.ReadUpTo(from, 1<<20, true, upTo)
		if err != nil {
			t.Fatalf("ReadUpTo(%d, bound %d): %v", from, upTo, err)
		}
		got := offsetsOf(decodeBatches(t, res.Records))
		if len(got) == 0 {
			return out
		}
		out = append(out, got...)
		from = got[len(got)-1] + 1
	}
}

func TestReadUpToReturnsOnlyWholeBatchesBelowTheBound(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1200 // a few batches per segment
	l, _ := openTestLog(t, cfg)
	for range 12 {
		mustAppend(t, l, testBatch{n: 5, valueSize: 40}.build(t)) // offsets 5i..5i+4
	}
	if len(l.segs) < 3 {
		t.Fatalf("want several segments, got %d", len(l.segs))
	}
	for _, c := range []struct {
		from, upTo int64
		want       int // records returned: whole batches, from the one holding `from`
	}{
		{0, 10, 10},   // a batch boundary
		{0, 12, 10},   // inside a batch: that batch is left out
		{7, 12, 5},    // the read starts inside the batch 5-9
		{10, 12, 0},   // the first batch reaches the bound
		{12, 10, 0},   // offset past the bound
		{0, 60, 60},   // the log end
		{0, 1e9, 60},  // clamped to the log end
		{23, 41, 20},  // across segments, from inside 20-24 to before 40
		{50, 55, 5},   // in the last segment
		{40, 60, 20},  // from a segment start
		{0, 0, 0},     // nothing
		{35, 36, 0},   // a bound one past a batch start
		{35, 40, 5},   // exactly one batch
		{59, 60, 5},   // the last batch, read from its last offset
		{0, 5, 5},     // the first batch
		{0, 4, 0},     // below the first batch's end
		{30, 1e9, 30}, // from the middle to the end
		{0, 58, 55},   // everything but the last batch
	} {
		got := readUpTo(t, l, c.from, c.upTo)
		if len(got) != c.want || (len(got) > 0 && got[len(got)-1] >= c.upTo) {
			t.Fatalf("ReadUpTo(%d, bound %d) returned offsets %v, want %d records below the bound", c.from, c.upTo, got, c.want)
		}
	}
	if _, err := l.ReadUpTo(61, 1<<20, true, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadUpTo past the log end: %v", err)
	}
	// maxBytes still applies below the bound.
	if res, _ := l.ReadUpTo(0, 1, false, 30); len(res.Records) != 0 {
		t.Fatal("a read of 1 byte without minOneBatch returned a batch")
	}
	if res, _ := l.ReadUpTo(0, 1, true, 30); len(offsetsOf(decodeBatches(t, res.Records))) != 5 {
		t.Fatal("minOneBatch did not return the first batch")
	}
}

func TestRetentionStopsAtTheHighWatermark(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1200
	cfg.RetentionMs = 60_000
	l, _ := openTestLog(t, cfg)
	l.SetReplicated(true)
	old := testNow.UnixMilli() - 120_000
	for range 12 {
		mustAppend(t, l, testBatch{n: 5, valueSize: 40, firstTs: old}.build(t))
	}
	if _, err := l.SetHighWatermark(25); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EnforceRetention(testNow); err != nil {
		t.Fatal(err)
	}
	// Every segment is expired; only those wholly below the high watermark go.
	start := l.LogStartOffset()
	if start == 0 || start > 25 {
		t.Fatalf("log start %d after retention with high watermark 25", start)
	}
	if got := l.segs[0]; got.base > 25 || (len(l.segs) > 1 && l.segs[1].base <= 25) {
		t.Fatalf("the segment holding the high watermark (first now at %d) was not the one kept", got.base)
	}
	if l.LogEndOffset() != 60 {
		t.Fatalf("retention lost uncommitted offsets: log end %d", l.LogEndOffset())
	}
}

func TestCleaningStopsAtTheHighWatermark(t *testing.T) {
	l, _ := openTestLog(t, compactConfig())
	l.SetReplicated(true)
	// The same key rewritten in four segments: a clean would keep only the last.
	for range 4 {
		mustAppend(t, l, testBatch{recs: []kv{rec("k", "v")}}.build(t))
		rollNow(t, l)
	}
	if _, err := l.SetHighWatermark(2); err != nil {
		t.Fatal(err)
	}
	res := mustClean(t, l, testNow)
	if res.EndOffset > 2 {
		t.Fatalf("cleaned up to offset %d, past the high watermark 2", res.EndOffset)
	}
	// Offsets 2 and 3 are not committed: the cleaner must not have judged them.
	got := readUpTo(t, l, 0, l.LogEndOffset())
	if len(got) < 2 || got[len(got)-2] != 2 || got[len(got)-1] != 3 {
		t.Fatalf("offsets after cleaning below the high watermark: %v", got)
	}
}
