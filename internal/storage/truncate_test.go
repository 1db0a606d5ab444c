package storage

import (
	"errors"
	"testing"
)

// Leader epochs are recorded as batches of each new epoch are written,
// answer EndOffsetForEpoch as Kafka's cache does, and survive a restart; a
// truncation across several segments cuts at a batch boundary, drops the
// epochs past the cut and the high watermark with it, and the log goes on
// from the cut, also after a restart.
func TestLeaderEpochsAndTruncation(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	if e, off := l.EndOffsetForEpoch(0); e != -1 || off != -1 {
		t.Fatalf("empty log: epoch %d offset %d, want -1 -1", e, off)
	}
	// epoch 0: offsets 0-29, epoch 2: 30-59, epoch 5: 60-89, over many
	// 4 KiB segments.
	for _, epoch := range []int32{0, 2, 5} {
		l.SetLeaderEpoch(epoch)
		for range 10 {
			mustAppend(t, l, testBatch{n: 3, valueSize: 300}.build(t))
		}
	}
	if n := len(segmentFiles(t, dir, ".log")); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	for _, tc := range []struct {
		asked, epoch int32
		end          int64
	}{
		{5, 5, 90}, {4, 2, 60}, {2, 2, 60}, {1, 0, 30}, {0, 0, 30}, {6, -1, -1},
	} {
		if e, off := l.EndOffsetForEpoch(tc.asked); e != tc.epoch || off != tc.end {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", tc.asked, e, off, tc.epoch, tc.end)
		}
	}
	l.SetReplicated(true)
	if _, err := l.SetHighWatermark(80); err != nil {
		t.Fatal(err)
	}
	// Offset 40 is inside the batch 39-41: the cut is at 39.
	if err := l.TruncateTo(40); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 39 || l.HighWatermark() != 39 || l.LatestEpoch() != 2 {
		t.Fatalf("after TruncateTo(40): end %d hw %d latest epoch %d; want 39 39 2", l.LogEndOffset(), l.HighWatermark(), l.LatestEpoch())
	}
	if e, off := l.EndOffsetForEpoch(5); e != -1 || off != -1 {
		t.Errorf("epoch 5 after the cut: %d %d", e, off)
	}
	if got := readAll(t, l, 0, 1<<20); len(got) != 39 || got[38].offset != 38 {
		t.Fatalf("after the cut the log reads %d records", len(got))
	}
	if err := l.TruncateTo(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("below the log start: %v", err)
	}
	l.SetLeaderEpoch(7)
	if res := mustAppend(t, l, testBatch{n: 2}.build(t)); res.BaseOffset != 39 {
		t.Fatalf("append after the cut at %d, want 39", res.BaseOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 41 || l2.LatestEpoch() != 7 {
		t.Fatalf("reopened: end %d latest epoch %d; want 41 7", l2.LogEndOffset(), l2.LatestEpoch())
	}
	if e, off := l2.EndOffsetForEpoch(2); e != 2 || off != 39 {
		t.Errorf("reopened, epoch 2 ends at %d (epoch %d), want 39", off, e)
	}
	if got := readAll(t, l2, 0, 1<<20); len(got) != 41 {
		t.Errorf("reopened log reads %d records, want 41", len(got))
	}
}
