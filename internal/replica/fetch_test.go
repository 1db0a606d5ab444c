package replica

import (
	"context"
	"testing"
	"time"

	"kbroker/internal/record"
)

// The first partition with data comes whole even past the budget
// (KIP-74); the next gets nothing once the budget is spent. A long poll
// that is not done waits for maxWait and reads a last time.
func TestFetchReadBudgetAndLongPoll(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1}, []int32{1})
	var pts [2]Partition
	for i := range pts {
		pt, err := p.Lead(store.Snapshot(), topic, int32(i))
		if err != nil {
			t.Fatal(err)
		}
		b := record.NewBuilder()
		b.Add(1000, nil, make([]byte, 100))
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pt.AppendAsLeader(batch, time.Now(), 1, 1); err != nil {
			t.Fatal(err)
		}
		pts[i] = pt
	}
	budget := NewFetchRead(10, 2, true, false)
	first, err := budget.Partition(&pts[0], -1, 0, 1<<20)
	if err != nil || len(first.Records) == 0 {
		t.Fatalf("first partition: %d bytes, %v; want its whole first batch", len(first.Records), err)
	}
	second, err := budget.Partition(&pts[1], -1, 0, 1<<20)
	if err != nil || len(second.Records) != 0 {
		t.Fatalf("second partition: %d bytes, %v; want none past the budget", len(second.Records), err)
	}
	if !budget.Reached(int32(len(first.Records))) || budget.Reached(int32(len(first.Records))+1) || len(budget.Keys()) != 2 {
		t.Errorf("reached/keys wrong: %v", budget.Keys())
	}

	reads := 0
	start := time.Now()
	p.LongPoll(context.Background(), 50*time.Millisecond, false, func(watch bool) ([]Key, bool) {
		reads++
		return []Key{pts[0].Key}, false
	})
	if reads < 2 || time.Since(start) < 50*time.Millisecond {
		t.Errorf("long poll read %d times in %v: want a wait of maxWait and a last read", reads, time.Since(start))
	}
}
