package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/record"
)

// An acks=all produce waiting for followers that never fetch answers
// NOT_LEADER_OR_FOLLOWER (ErrNotLeader) as soon as the partition's record
// names another leader, as Kafka's DelayedProduce does, not
// REQUEST_TIMED_OUT when its timeout ends: the producer retries on the new
// leader at once. A wait whose records are committed succeeds.
func TestAcksAllOnALeaderThatLosesLeadershipAnswersNotLeader(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1, 2, 3})
	pt, err := p.Lead(store.Snapshot(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := record.NewBuilder()
	b.Add(1000, nil, []byte("v"))
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := pt.AppendAsLeader(batch, time.Now(), -1, 2)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 20 * time.Second
	done := make(chan []CommitWait, 1)
	go func() {
		waits := []CommitWait{{Partition: pt, LastOffset: res.LastOffset, MinInsync: 2}}
		p.AwaitCommitted(context.Background(), waits, timeout)
		done <- waits
	}()
	time.Sleep(100 * time.Millisecond) // parked: no follower has fetched
	select {
	case <-done:
		t.Fatal("the acks=all wait ended before any follower fetched")
	default:
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := store.AlterPartition(ctx, "t", topic.ID, 0, meta.PartitionRecord{},
		meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case waits := <-done:
		if !errors.Is(waits[0].Err, ErrNotLeader) || waits[0].Err.Error() != "Broker 1 is no longer the leader of t-0; the records may not be committed" {
			t.Fatalf("wait after the leader changed: %v, want ErrNotLeader", waits[0].Err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("answered %v after the change, want at once", d)
		}
	case <-time.After(timeout / 2):
		t.Fatal("the acks=all wait did not end when leadership moved")
	}
}
