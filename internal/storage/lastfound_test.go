package storage

import (
	"fmt"
	"testing"
)

// A read remembers the batch it found (segment.lastFound) so that the next
// read of that offset, or of the batch after it, needs no header scan. A
// follower's truncation rewrites the bytes past the cut: a read afterwards
// must find the new batches, not the one remembered where they now lie.
func TestReadAfterTruncationFindsTheNewBatches(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig()) // one index entry: every read scans from position 0
	for i := range 3 {
		mustAppend(t, l, testBatch{n: 1, tag: fmt.Sprintf("old%d", i)}.build(t))
	}
	if got := readAll(t, l, 2, 1<<20); len(got) != 1 || got[0].value != "old2-value-0" {
		t.Fatalf("before the cut, offset 2 reads %+v", got)
	}
	if err := l.TruncateTo(1); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch{n: 5, tag: "new"}.build(t)) // offsets 1-5, over where batch 2 was
	got := readAll(t, l, 2, 1<<20)
	if len(got) != 4 || got[0].offset != 2 || got[0].value != "new-value-1" {
		t.Fatalf("after the cut, offset 2 reads %+v; want offsets 2-5 of the new batch", got)
	}
}

// Reading a log batch by batch, and the same offset again, starts from the
// batch found last; every record still comes back once, in order, also
// when a read asks for an offset before the batch remembered.
func TestReadsFromTheBatchFoundLast(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	for i := range 50 {
		mustAppend(t, l, testBatch{n: 1 + i%3, tag: fmt.Sprint(i)}.build(t))
	}
	end := l.LogEndOffset()
	for off := int64(0); off < end; off++ {
		for range 2 { // the second read is answered from the batch remembered
			res, err := l.Read(off, 1, true) // one batch per read
			if err != nil {
				t.Fatal(err)
			}
			recs := decodeBatches(t, res.Records)
			if len(recs) == 0 || recs[0].offset > off || recs[len(recs)-1].offset < off {
				t.Fatalf("read at %d: %+v", off, recs)
			}
		}
	}
	if got := readAll(t, l, 0, 1<<20); int64(len(got)) != end {
		t.Fatalf("read %d records from 0 after the batch-by-batch reads, want %d", len(got), end)
	}
}

// A read of several batches remembers the last of them, where the next
// read of a consumer that keeps up begins: that read finds its batch with
// one header read instead of one per batch the previous read returned.
// Reads from anywhere still return every record once, in order.
func TestAReadOfManyBatchesRemembersTheLast(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	for i := range 40 {
		mustAppend(t, l, testBatch{n: 1, tag: fmt.Sprint(i)}.build(t))
	}
	var next int64
	for next < l.LogEndOffset() {
		res, err := l.Read(next, 700, true) // a few batches per read
		if err != nil {
			t.Fatal(err)
		}
		recs := decodeBatches(t, res.Records)
		if len(recs) < 2 && next+1 < l.LogEndOffset() {
			t.Fatalf("read at %d returned %d records; want several batches", next, len(recs))
		}
		if recs[0].offset != next {
			t.Fatalf("read at %d starts at %d", next, recs[0].offset)
		}
		last := recs[len(recs)-1].offset
		if f := l.active().lastFound.Load(); f == nil || f.h.BaseOffset != last {
			t.Fatalf("after reading %d-%d the segment remembers %+v, want the batch of %d", next, last, f, last)
		}
		next = last + 1
	}
	for _, from := range []int64{3, 0, 17} { // before the batch remembered
		if got := readAll(t, l, from, 1<<20); int64(len(got)) != l.LogEndOffset()-from || got[0].offset != from {
			t.Fatalf("from %d: %d records starting at %d", from, len(got), got[0].offset)
		}
	}
}
