package replica

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"kbroker/internal/meta"
)

// A follower that has caught up joins the ISR only while it is eligible:
// not while its registration is still marked UncleanShutdown (the
// controller would take it out again at once, and the ISR would flap), and
// not on fetches of another broker epoch than its registration's (KIP-903).
// A fetch of an older epoch than the follower's last is refused.
func TestCaughtUpFollowerJoinsTheISROnlyWhenEligible(t *testing.T) {
	p, store := testPartitions(t)
	ctx := context.Background()
	topic := createTopic(t, store, "t", []int32{1, 2})
	cur := store.Snapshot().Partition(topic, 0)
	shrunk := cur
	shrunk.ISR = []int32{1}
	if _, err := store.AlterPartition(ctx, "t", topic.ID, 0, cur, shrunk); err != nil {
		t.Fatal(err)
	}
	pt, err := p.Lead(store.Snapshot(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	isr := func() []int32 { return store.Snapshot().Partition(topic, 0).ISR }
	fetch := func(epoch int64) error {
		t.Helper()
		_, err := pt.FollowerFetch(ReplicaState{ID: 2, BrokerEpoch: epoch}, 0, 0, 0, 1<<20, true)
		return err
	}
	// stays checks that the ISR is still [1] once an ISR change the
	// fetch may have started (on a goroutine of its own) is done.
	stays := func(what string) {
		t.Helper()
		time.Sleep(200 * time.Millisecond)
		if got := isr(); !slices.Equal(got, []int32{1}) {
			t.Fatalf("%s: ISR %v, want [1]", what, got)
		}
	}

	if err := store.RegisterLocalBroker(ctx, meta.Broker{ID: 2, UncleanShutdown: true}); err != nil {
		t.Fatal(err)
	}
	if err := fetch(-1); err != nil {
		t.Fatal(err)
	}
	stays("follower still fenced after an unclean shutdown")

	if err := store.RegisterLocalBroker(ctx, meta.Broker{ID: 2}); err != nil {
		t.Fatal(err)
	}
	epoch := store.Snapshot().LiveBrokers()[2].Epoch
	if err := fetch(epoch - 1); err != nil {
		t.Fatal(err)
	}
	stays("fetch of the previous registration's broker epoch")

	if err := fetch(epoch); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(isr(), []int32{1, 2}) {
		if time.Now().After(deadline) {
			t.Fatalf("ISR %v after a caught-up fetch of the registered broker epoch, want [1 2]", isr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := fetch(epoch - 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("fetch of an older broker epoch than the follower's last: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}
