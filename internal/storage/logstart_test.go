package storage

import (
	"errors"
	"testing"
)

func TestDeleteRecordsMovesTheLogStartInsideASegmentAndSurvivesACrash(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1200
	l, dir := openTestLog(t, cfg)
	for range 12 {
		mustAppend(t, l, testBatch{n: 5, valueSize: 40}.build(t))
	}
	segsBefore := len(l.segs)
	if _, err := l.IncrementLogStartOffset(61); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("deleting past the high watermark: %v, want ErrOffsetOutOfRange", err)
	}
	start, err := l.IncrementLogStartOffset(27)
	if err != nil || start != 27 {
		t.Fatalf("IncrementLogStartOffset(27) = %d, %v", start, err)
	}
	if start, _ := l.IncrementLogStartOffset(10); start != 27 {
		t.Fatalf("a lower offset moved the log start to %d", start)
	}
	if len(l.segs) >= segsBefore || l.segs[0].base > 27 || (len(l.segs) > 1 && l.segs[1].base <= 27) {
		t.Fatalf("segments below the new start were not deleted (or too many were): %d of %d left, first at %d", len(l.segs), segsBefore, l.segs[0].base)
	}
	if _, err := l.Read(26, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v, want ErrOffsetOutOfRange", err)
	}
	if res, err := l.Read(27, 1<<20, true); err != nil || res.LogStartOffset != 27 {
		t.Fatalf("read at the log start: log start %d, %v", res.LogStartOffset, err)
	}

	// A crash: the directory is opened again with no clean shutdown.
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := l2.LogStartOffset(); got != 27 {
		t.Fatalf("after a crash the log starts at %d, want 27", got)
	}
	if _, err := l2.Read(26, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("after a crash a read below the log start: %v", err)
	}

	// Every record deleted: the log is empty from its end on.
	if start, err := l2.IncrementLogStartOffset(60); err != nil || start != 60 || l2.LogEndOffset() != 60 {
		t.Fatalf("deleting everything: start %d end %d, %v", start, l2.LogEndOffset(), err)
	}
	res := mustAppend(t, l2, testBatch{n: 1}.build(t))
	if res.BaseOffset != 60 || res.LogStartOffset != 60 {
		t.Fatalf("append after deleting everything: %+v", res)
	}
}

func TestTruncateFullyAndStartAtLeavesAnEmptyLogThatContinuesAtTheOffset(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1200
	l, dir := openTestLog(t, cfg)
	l.SetReplicated(true)
	for range 6 {
		mustAppend(t, l, testBatch{n: 5, valueSize: 40}.build(t))
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.HighWatermark() != 100 || len(l.segs) != 1 {
		t.Fatalf("start %d end %d hw %d segments %d, want 100 100 100 1", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), len(l.segs))
	}
	if _, err := l.Read(20, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of an old offset: %v", err)
	}
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 100 || l2.LogEndOffset() != 100 {
		t.Fatalf("reopened: start %d end %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

func TestDeleteRecordsMovesTheLeaderEpochsToTheNewStart(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	for epoch := int32(1); epoch <= 3; epoch++ {
		l.SetLeaderEpoch(epoch)
		if err := l.StartLeaderEpoch(epoch); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			mustAppend(t, l, testBatch{n: 5}.build(t))
		}
	}
	// Epoch 1 holds 0-9, epoch 2 10-19, epoch 3 20-29.
	if _, err := l.IncrementLogStartOffset(15); err != nil {
		t.Fatal(err)
	}
	if got := l.epochs.entries; len(got) != 2 || got[0] != (EpochEntry{2, 15}) || got[1] != (EpochEntry{3, 20}) {
		t.Fatalf("epochs after deleting below 15: %v, want [{2 15} {3 20}]", got)
	}
}
