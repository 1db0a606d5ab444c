package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/testkit"
)

// testPartitions is broker 1's Partitions over a real bbolt store and real
// logs.
func testPartitions(t *testing.T) (*Partitions, *meta.Store) {
	t.Helper()
	k := testkit.NewBrokerBase(t)
	return New(k.Config, k.Store, k.Configs, k.Logs, k.Logger), k.Store
}

// createTopic stores topic name with one partition per replica list.
func createTopic(t *testing.T, store *meta.Store, name string, replicas ...[]int32) *meta.Topic {
	t.Helper()
	topic, err := store.CreateTopic(context.Background(), meta.Topic{Name: name, Partitions: int32(len(replicas)), ReplicationFactor: 1, Replicas: replicas}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return topic
}

func TestStateOfASingleReplicaPartition(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1}, []int32{2})
	snap := store.Snapshot()
	live := map[int32]*meta.Broker{1: {ID: 1}}

	st := p.State(snap, topic, 0, live)
	if st.Leader != 1 || st.LeaderEpoch != 0 || !slices.Equal(st.Replicas, []int32{1}) || !slices.Equal(st.ISR, []int32{1}) || len(st.OfflineReplicas) != 0 {
		t.Fatalf("partition led by live broker 1: %+v", st)
	}
	// Broker 2 is not live: no leader, nothing in sync, its replica offline.
	st = p.State(snap, topic, 1, live)
	if st.Leader != -1 || !slices.Equal(st.Replicas, []int32{2}) || st.ISR == nil || len(st.ISR) != 0 || !slices.Equal(st.OfflineReplicas, []int32{2}) {
		t.Fatalf("partition led by a broker that is down: %+v", st)
	}
	// A partition placed before placement was recorded is led by whoever reads it.
	legacy := &meta.Topic{Name: "old", ID: meta.TopicID{7}, Partitions: 1}
	if st := p.State(snap, legacy, 0, live); st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("partition without a recorded placement: %+v", st)
	}
}

func TestLeadRefusesPartitionsLedElsewhere(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1}, []int32{2})
	snap := store.Snapshot()
	if _, err := p.Lead(snap, topic, 1); !errors.Is(err, ErrNotLeader) || err.Error() != "Broker 1 is not the leader of t-1; broker 2 is." {
		t.Fatalf("lead of a partition broker 2 leads: %v", err)
	}
	pt, err := p.Lead(snap, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Key != (Key{topic.ID, 0}) || pt.HighWatermark() != 0 || pt.LastStableOffset() != 0 || pt.LogStartOffset() != 0 {
		t.Fatalf("a new partition: key %v, offsets %d %d %d", pt.Key, pt.HighWatermark(), pt.LastStableOffset(), pt.LogStartOffset())
	}
}

func TestLeaderEpochCheck(t *testing.T) {
	st := PartitionState{Leader: 1, LeaderEpoch: 5}
	for _, c := range []struct {
		epoch int32
		want  error
		msg   string
	}{
		{-1, nil, ""}, // the client does not know: not checked
		{5, nil, ""},
		{4, ErrFencedLeaderEpoch, "The leader epoch in the request is older than the epoch on the broker."},
		{6, ErrUnknownLeaderEpoch, "The leader epoch in the request is newer than the broker's."},
	} {
		err := st.CheckLeaderEpoch(c.epoch)
		if !errors.Is(err, c.want) || (err != nil && err.Error() != c.msg) {
			t.Errorf("epoch %d against 5: %v, want %v (%q)", c.epoch, err, c.want, c.msg)
		}
	}
}

func TestAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1})
	pt, err := p.Lead(store.Snapshot(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pt.AppendAsLeader(testkit.OneRecordBatch(t, []byte("v")), time.Now(), -1, 2)
	if !errors.Is(err, ErrNotEnoughReplicas) || err.Error() != "The size of the current ISR Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition t-0" {
		t.Fatalf("acks=all with min.insync.replicas 2 on one replica: %v", err)
	}
	if pt.HighWatermark() != 0 {
		t.Fatal("a refused acks=all batch was appended")
	}
	for _, acks := range []int16{1, -1} {
		minInsync := 2
		if acks == -1 {
			minInsync = 1
		}
		if _, err := pt.AppendAsLeader(testkit.OneRecordBatch(t, []byte("v")), time.Now(), acks, minInsync); err != nil {
			t.Fatalf("acks=%d, min.insync.replicas %d: %v", acks, minInsync, err)
		}
	}
	f, err := pt.Read(0, 1<<20, true, false)
	if err != nil || f.HighWatermark != 2 || f.LastStableOffset != 2 || len(f.Records) == 0 {
		t.Fatalf("read after two appends: %+v, %v", f, err)
	}
}

// A request waiting on a partition is woken by an append to it, and by the
// deletion of its topic.
func TestAppendsAndDeletionsWakeWaitingRequests(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1}, []int32{1})
	pt, err := p.Lead(store.Snapshot(), topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	wait := func(key Key) <-chan bool {
		done := make(chan bool, 1)
		q := p.Delayed()
		seen := q.Notifications()
		go func() {
			c, _ := q.Await(context.Background(), []Key{key}, seen, time.Now().Add(time.Minute), func() bool { return true })
			done <- c
		}()
		return done
	}
	woken := func(done <-chan bool, what string) {
		t.Helper()
		select {
		case c := <-done:
			if !c {
				t.Fatalf("%s: not completed", what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not wake the waiting request", what)
		}
	}
	done := wait(pt.Key)
	for p.Delayed().parked.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := pt.AppendAsLeader(testkit.OneRecordBatch(t, []byte("v")), time.Now(), 1, 1); err != nil {
		t.Fatal(err)
	}
	woken(done, "an append")

	done = wait(Key{topic.ID, 0})
	for p.Delayed().parked.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	if err := store.DeleteTopic(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	woken(done, "deleting the topic")
}

// A request holding a snapshot from before its topic was deleted gets
// UNKNOWN_TOPIC_OR_PARTITION (meta.ErrUnknownTopic), and the deleted
// partition's directory is not created again.
func TestLeadOfADeletedTopicDoesNotReopenItsLog(t *testing.T) {
	k := testkit.NewBrokerBase(t)
	p := New(k.Config, k.Store, k.Configs, k.Logs, k.Logger)
	topic := createTopic(t, k.Store, "gone", []int32{1})
	stale := k.Store.Snapshot()
	if err := k.Store.DeleteTopic(testkit.Context(t, 5*time.Second), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lead(stale, topic, 0); !errors.Is(err, meta.ErrUnknownTopic) {
		t.Fatalf("lead of a deleted topic: %v, want meta.ErrUnknownTopic", err)
	}
	if _, err := os.Stat(filepath.Join(k.Config.LogDirs[0], "gone-0")); !os.IsNotExist(err) {
		t.Fatalf("the deleted partition's directory exists again (%v)", err)
	}
}
