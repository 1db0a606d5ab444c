package storage

import (
	"bytes"
	"errors"
	"testing"
)

// A read with nothing to return is answered from the offsets alone,
// without the segments (readNothing); its answer must be the full read's
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
					if _, ok := l.readNothing(offset, maxBytes, minOne, upTo); ok {
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
	if _, ok := l.readNothing(6, 1<<20, true, l.HighWatermark()); !ok {
		t.Fatal("a read at the high watermark went to the segments")
	}
	if _, ok := l.readNothing(10, 1<<20, true, l.LogEndOffset()); !ok {
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
