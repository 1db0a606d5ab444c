package storage

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"kbroker/internal/record"
)

// pinnedBytes reads what a file range names, through its pinned
// descriptor, as the sender would send it.
func pinnedBytes(t *testing.T, r FileRange) []byte {
	t.Helper()
	f, off, err := r.Pin()
	if err != nil {
		t.Fatalf("pin: %v", err)
	}
	defer f.Close()
	b := make([]byte, r.Len())
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// A read left in its file names exactly the bytes the same read returns in
// memory, at every offset and limit, with batches of every size (small
// ones walked header by header, large ones past the index's skip), across
// segments, and for read_committed with its aborted transactions.
func TestReadRangeIsTheSameReadAsRead(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1 << 20
	l, _ := openTestLog(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	seq := map[int64]int32{}
	open := map[int64]bool{}
	for i := range 300 {
		size := []int{50, 900, 5000, 40000}[rng.IntN(4)]
		n := 1 + rng.IntN(5)
		switch pid := int64(1 + rng.IntN(3)); rng.IntN(4) {
		case 0: // a transaction's batch
			mustAppend(t, l, testBatch{n: n, valueSize: size, pid: pid, epoch: 0, seq: seq[pid], attrs: record.AttrTransactional}.build(t))
			seq[pid] += int32(n)
			open[pid] = true
		case 1:
			if open[pid] {
				mustMarker(t, l, pid, 0, rng.IntN(2) == 0, 0)
				open[pid] = false
				break
			}
			fallthrough
		default:
			mustAppend(t, l, testBatch{n: n, valueSize: size, tag: string(rune('a' + i%26))}.build(t))
		}
	}
	files, aborted := 0, 0
	for range 400 {
		off := rng.Int64N(l.HighWatermark())
		maxBytes := int32([]int{1, 1000, 16 << 10, 20000, 100000, 1 << 20}[rng.IntN(6)])
		minOne := rng.IntN(2) == 0
		for _, committed := range []bool{false, true} {
			var want ReadResult
			var err error
			if committed {
				want, err = l.ReadCommitted(off, maxBytes, minOne)
			} else {
				want, err = l.Read(off, maxBytes, minOne)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.ReadRange(off, maxBytes, minOne, committed)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() != want.Len() || got.HighWatermark != want.HighWatermark || got.LastStableOffset != want.LastStableOffset || !slices.Equal(got.AbortedTxns, want.AbortedTxns) {
				t.Fatalf("offset %d max %d: range read %d bytes, read %d", off, maxBytes, got.Len(), want.Len())
			}
			b := got.Records
			if got.File.Len() > 0 {
				files++
				if len(got.Records) != 0 || got.File.Len() < FileRangeMin {
					t.Fatalf("offset %d max %d: file range of %d bytes with %d in memory", off, maxBytes, got.File.Len(), len(got.Records))
				}
				b = pinnedBytes(t, got.File)
				if len(got.AbortedTxns) > 0 {
					aborted++
				}
			}
			if !bytes.Equal(b, want.Records) {
				t.Fatalf("offset %d max %d: range holds other bytes than the read", off, maxBytes)
			}
		}
	}
	if files == 0 || aborted == 0 {
		t.Fatalf("%d reads were left in their file, %d with aborted transactions", files, aborted)
	}
}

// A pinned range stays readable after its segment is deleted: the send of a
// fetch answer that retention overtakes still sends the bytes it promised.
func TestPinnedRangeOutlivesSegmentDeletion(t *testing.T) {
	cfg := DefaultConfig()
	l, _ := openTestLog(t, cfg)
	for range 10 {
		mustAppend(t, l, testBatch{n: 4, valueSize: 10000}.build(t))
	}
	want, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadRange(0, 1<<20, true, false)
	if err != nil || got.File.Len() == 0 {
		t.Fatalf("range read: %v, %d bytes in the file", err, got.File.Len())
	}
	f, off, err := got.File.Pin()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seg := got.File.seg
	if err := seg.remove(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := got.File.Pin(); err == nil {
		t.Fatal("pinned a deleted segment")
	}
	b := make([]byte, got.File.Len())
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want.Records) {
		t.Fatal("the pinned descriptor reads other bytes after the deletion")
	}
}
