package storage

import (
	"bytes"
	"errors"
	"testing"
)

// A read with nothing to return is answered from the offsets alone,
// without the segments (nothingAt); its answer must be the full read's
// in every case: offsets below the log start, between the high watermark
// and the log end, past the end, a spent budget, a bound below the high
// watermark (a read_committed one), with and without KIP-74's first batch.
func TestReadWithoutSegmentsAnswersAsTheFullRead(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	for range 10 {
		mustAppend(t, l, testBatch{}.build(t))
	}
	l.SetReplicated(true)
	if _, err := l.SetHighWatermark(6); err != nil {
		t.Fatal(err)
	}
	if _, err := l.IncrementLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	fast := 0
	for offset := int64(-1); offset <= 12; offset++ {
		for _, maxBytes := range []int32{-1, 0, 1, 1 << 20} {
			for _, minOne := range []bool{false, true} {
				for _, upTo := range []int64{4, 6, 10, 1 << 40} {
					want, wantErr := l.readSegments(offset, maxBytes, minOne, upTo, false)
					got, gotErr := l.read(offset, maxBytes, minOne, upTo, false)
					if _, _, _, ok := l.nothingAt(offset, maxBytes, minOne, upTo); ok {
						fast++
					}
					if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && errors.Is(wantErr, ErrOffsetOutOfRange) != errors.Is(gotErr, ErrOffsetOutOfRange)) {
						t.Fatalf("offset %d max %d minOne %v upTo %d: error %v, the full read's %v", offset, maxBytes, minOne, upTo, gotErr, wantErr)
					}
					if !bytes.Equal(got.Records, want.Records) || got.HighWatermark != want.HighWatermark ||
						got.LastStableOffset != want.LastStableOffset || got.LogStartOffset != want.LogStartOffset {
						t.Fatalf("offset %d max %d minOne %v upTo %d: read %d bytes hw %d lso %d start %d, the full read %d bytes hw %d lso %d start %d",
							offset, maxBytes, minOne, upTo, len(got.Records), got.HighWatermark, got.LastStableOffset, got.LogStartOffset,
							len(want.Records), want.HighWatermark, want.LastStableOffset, want.LogStartOffset)
					}
				}
			}
		}
	}
	// An idle consumer (at the high watermark) and a follower at the log
	// end are among those answered without the segments.
	if _, _, _, ok := l.nothingAt(6, 1<<20, true, l.HighWatermark()); !ok {
		t.Fatal("a read at the high watermark went to the segments")
	}
	if _, _, _, ok := l.nothingAt(10, 1<<20, true, l.LogEndOffset()); !ok {
		t.Fatal("a read at the log end went to the segments")
	}
	if fast == 0 {
		t.Fatal("no read was answered without the segments")
	}
}

// A closed log answers ErrClosed even to a read that would need no
// segment.
func TestReadOfAClosedLogFailsWithoutSegments(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	mustAppend(t, l, testBatch{}.build(t))
	if _, err := l.Read(1, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if !l.Closing() {
		t.Fatal("a closed log does not say it is closing")
	}
	if _, err := l.Read(1, 1<<20, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read at the end of a closed log: %v, want ErrClosed", err)
	}
}

// A batch a read found too big for its budget is remembered: the next read
// of the same offset with no more room answers without the segments, one
// with room (or that must return a first batch) reads it, and a truncation
// forgets it, since the batch at that offset may then be another.
func TestReadRemembersTheBatchTooBigForItsBudget(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	for range 3 {
		mustAppend(t, l, testBatch{}.build(t))
	}
	mustAppend(t, l, testBatch{valueSize: 1000}.build(t)) // offset 3
	mustAppend(t, l, testBatch{}.build(t))
	hw := l.HighWatermark()
	if _, _, _, ok := l.nothingAt(3, 500, false, hw); ok {
		t.Fatal("a batch never read was taken as too big")
	}
	if res, err := l.Read(3, 500, false); err != nil || res.Len() != 0 {
		t.Fatalf("read of a 1 KB batch with 500 B: %d bytes, %v", res.Len(), err)
	}
	if _, _, _, ok := l.nothingAt(3, 500, false, hw); !ok {
		t.Fatal("the batch just found too big is read again")
	}
	for _, tc := range []struct {
		maxBytes int32
		minOne   bool
	}{{2000, false}, {500, true}} {
		if _, _, _, ok := l.nothingAt(3, tc.maxBytes, tc.minOne, hw); ok {
			t.Fatalf("max %d minOne %v: answered without the batch it must return", tc.maxBytes, tc.minOne)
		}
		if res, err := l.Read(3, tc.maxBytes, tc.minOne); err != nil || res.Len() < 1000 {
			t.Fatalf("max %d minOne %v: read %d bytes, %v", tc.maxBytes, tc.minOne, res.Len(), err)
		}
	}
	if _, _, _, ok := l.nothingAt(4, 100, false, hw); ok {
		t.Fatal("another offset was taken as holding the batch too big")
	}
	// A follower truncates to 3 and takes a small batch there from its leader.
	l.Read(3, 500, false)
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch{}.build(t))
	if res, err := l.Read(3, 500, false); err != nil || res.Len() == 0 {
		t.Fatalf("after the truncation, the small batch at 3 was not read with 500 B: %d bytes, %v", res.Len(), err)
	}
}
