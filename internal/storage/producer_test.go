package storage

import (
	"errors"
	"math"
	"testing"
)

func idem(pid int64, epoch int16, seq int32, n int) []byte {
	return testBatch{n: n, pid: pid, epoch: epoch, seq: seq}.build(nil)
}

func TestIdempotentProducer(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	const pid = 1000
	r0 := mustAppend(t, l, idem(pid, 0, 0, 3)) // seq 0-2, offsets 0-2
	r1 := mustAppend(t, l, idem(pid, 0, 3, 2)) // seq 3-4, offsets 3-4
	mustAppend(t, l, idem(2000, 0, 0, 1))      // another producer, offset 5

	// A retry of either recent batch is a duplicate with the original offsets.
	for _, c := range []struct {
		seq  int32
		n    int
		want AppendResult
	}{{0, 3, r0}, {3, 2, r1}} {
		res, err := l.Append(idem(pid, 0, c.seq, c.n), testNow)
		if err != nil || !res.Duplicate || res.BaseOffset != c.want.BaseOffset || res.LastOffset != c.want.LastOffset {
			t.Fatalf("retry of seq %d: %+v, %v", c.seq, res, err)
		}
	}
	if l.HighWatermark() != 6 {
		t.Fatalf("duplicates were written: hwm %d", l.HighWatermark())
	}
	// Gap and reorder.
	if _, err := l.Append(idem(pid, 0, 6, 1), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := l.Append(idem(pid, 0, 2, 1), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("overlap that is not a retry: %v", err)
	}
	// A new epoch must start at 0; then the old epoch is fenced.
	if _, err := l.Append(idem(pid, 1, 5, 1), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at seq 5: %v", err)
	}
	mustAppend(t, l, idem(pid, 1, 0, 1))
	if _, err := l.Append(idem(pid, 0, 5, 1), testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// The new epoch forgot the old epoch's batches: the old retry is not a duplicate.
	if _, err := l.Append(idem(pid, 0, 0, 3), testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old-epoch retry: %v", err)
	}
	// Kafka 4 accepts an unknown producer at any sequence (KIP-360).
	mustAppend(t, l, idem(3000, 4, 77, 1))
	mustAppend(t, l, idem(3000, 4, 78, 1))

	// Only the last 5 batches are remembered.
	for s := int32(1); s <= 6; s++ {
		mustAppend(t, l, idem(pid, 1, s, 1))
	}
	if _, err := l.Append(idem(pid, 1, 1, 1), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of a batch older than the last 5: %v", err)
	}
	if res, err := l.Append(idem(pid, 1, 2, 1), testNow); err != nil || !res.Duplicate {
		t.Fatalf("retry of the 5th most recent batch: %+v %v", res, err)
	}

	// State survives a restart, rebuilt from the batch headers.
	hwm := l.HighWatermark()
	for _, clean := range []bool{true, false} {
		if clean {
			l.Close()
		} else {
			crash(t, l)
		}
		var err error
		if l, err = Open(dir, smallConfig()); err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(idem(pid, 1, 6, 1), testNow)
		if err != nil || !res.Duplicate || res.BaseOffset != hwm-1 {
			t.Fatalf("retry after reopen (clean=%v): %+v %v", clean, res, err)
		}
		if _, err := l.Append(idem(pid, 0, 7, 1), testNow); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("fencing after reopen: %v", err)
		}
		if _, err := l.Append(idem(pid, 1, 9, 1), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("gap after reopen: %v", err)
		}
	}
	mustAppend(t, l, idem(pid, 1, 7, 1))
	l.Close()
}

func TestSequenceWrapsAtInt32Max(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	mustAppend(t, l, idem(5, 0, math.MaxInt32-1, 2)) // seq MaxInt32-1, MaxInt32
	mustAppend(t, l, idem(5, 0, 0, 1))
	// A batch spanning the wrap.
	l2, _ := openTestLog(t, DefaultConfig())
	mustAppend(t, l2, idem(6, 0, math.MaxInt32-1, 4)) // last seq wraps to 1
	mustAppend(t, l2, idem(6, 0, 2, 1))
	if res, err := l2.Append(idem(6, 0, math.MaxInt32-1, 4), testNow); err != nil || !res.Duplicate {
		t.Fatalf("retry of wrapping batch: %+v %v", res, err)
	}
}

func TestRetentionForgetsExpiredProducers(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 0
	l, _ := openTestLog(t, cfg)
	mustAppend(t, l, idem(9, 0, 0, 1))
	if _, err := l.EnforceRetention(testNow); err != nil {
		t.Fatal(err)
	}
	// Its batches are gone: like Kafka, the producer may continue at any sequence.
	mustAppend(t, l, idem(9, 0, 50, 1))
}
