package replica

import (
	"errors"
	"testing"
	"time"

	"kbroker/internal/record"
)

// ListOffset answers each special timestamp with the position it names
// and a time with the first record at or after it.
func TestListOffsetSpecialTimestampsAndTimes(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1})
	pt, err := p.Lead(store.Snapshot(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{1000, 3000, 2000} { // offsets 0, 1, 2
		b := record.NewBuilder()
		b.Add(ts, nil, []byte("v"))
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pt.AppendAsLeader(batch, time.Now(), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ts            int64
		readCommitted bool
		offset, time  int64
	}{
		{OffsetLatest, false, 3, -1},
		{OffsetLatest, true, 3, -1},
		{OffsetEarliest, false, 0, -1},
		{OffsetEarliestLocal, false, 0, -1},
		{OffsetMaxTimestamp, false, 1, 3000},
		{OffsetLatestTiered, false, -1, -1},
		{1500, false, 1, 3000}, // the first record at or after 1500 is offset 1
		{2500, false, 1, 3000},
		{3001, false, -1, -1}, // none
	} {
		off, ts, err := pt.ListOffset(c.ts, c.readCommitted)
		if err != nil || off != c.offset || ts != c.time {
			t.Errorf("ListOffset(%d, read_committed %v) = %d, %d, %v; want %d, %d", c.ts, c.readCommitted, off, ts, err, c.offset, c.time)
		}
	}
	if _, _, err := pt.ListOffset(-6, false); !errors.Is(err, ErrUnknownSpecialTimestamp) {
		t.Errorf("ListOffset(-6): %v, want ErrUnknownSpecialTimestamp", err)
	}
}
