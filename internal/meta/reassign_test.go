package meta

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
)

// A reassignment in progress lives in the partition record: a later change
// that carries it on (a leader's ISR change, made from the record it read)
// keeps it; a change that clears it ends it, even one that keeps the
// replicas (a reassignment that only added some). On both backends.
func TestAlterPartitionKeepsAReassignmentAcrossISRChanges(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(cb.open(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			topic, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1, ReplicationFactor: 3, Replicas: [][]int32{{1, 2, 3}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The brokers added to the ISR are live.
			if err := s.Update(ctx, func(tx Tx) error {
				for _, id := range []int32{3, 4} {
					putJSON(tx, BrokerKey(id), Broker{ID: id})
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			st := s.Snapshot().Partition(topic, 0)
			moving := st
			moving.Replicas, moving.AddingReplicas, moving.RemovingReplicas = []int32{1, 2, 4, 3}, []int32{4}, []int32{3}
			moving.LeaderEpoch++
			got, err := s.AlterPartition(ctx, "t", topic.ID, 0, st, moving)
			if err != nil || !got.Reassigning() {
				t.Fatalf("starting: %+v %v", got, err)
			}
			isrChange := PartitionRecord{Replicas: []int32{1, 2, 4, 3}, ISR: []int32{1, 2, 3, 4}, Leader: 1, LeaderEpoch: got.LeaderEpoch,
				AddingReplicas: []int32{4}, RemovingReplicas: []int32{3}}
			// Twice: the second change reads the record the first wrote.
			if got, err = s.AlterPartition(ctx, "t", topic.ID, 0, got, isrChange); err != nil {
				t.Fatal(err)
			}
			isrChange.ISR = []int32{1, 2, 4, 3}
			got, err = s.AlterPartition(ctx, "t", topic.ID, 0, got, isrChange)
			if err != nil || !slices.Equal(got.AddingReplicas, []int32{4}) || !slices.Equal(got.RemovingReplicas, []int32{3}) {
				t.Fatalf("the ISR change dropped the reassignment: %+v %v", got, err)
			}
			if cur := s.Snapshot().Partition(topic, 0); !cur.Reassigning() || !slices.Equal(cur.ISR, []int32{1, 2, 4, 3}) || !slices.Equal(cur.Replicas, []int32{1, 2, 4, 3}) {
				t.Fatalf("snapshot after the ISR change: %+v", cur)
			}
			done := PartitionRecord{Replicas: []int32{2, 4, 1}, ISR: []int32{1, 2, 4}, Leader: 2, LeaderEpoch: got.LeaderEpoch + 1}
			if got, err = s.AlterPartition(ctx, "t", topic.ID, 0, got, done); err != nil || got.Reassigning() {
				t.Fatalf("completing: %+v %v", got, err)
			}
			// Placement is read from the partition record, never from
			// the topic's creation assignment, which stays as created.
			snap := s.Snapshot()
			tp := snap.Topic("t")
			if l := snap.Leader(tp, 0, 9); l != 2 || !slices.Equal(snap.Partition(tp, 0).Replicas, []int32{2, 4, 1}) {
				t.Errorf("after the reassignment: leader %d replicas %v, want 2 and 2,4,1", l, snap.Partition(tp, 0).Replicas)
			}
			if !slices.Equal(tp.Replicas[0], []int32{1, 2, 3}) {
				t.Errorf("the creation assignment changed: %v", tp.Replicas[0])
			}
			// Only adding: the completion keeps the replicas and clears
			// the reassignment.
			adding := got
			adding.Replicas, adding.AddingReplicas, adding.RemovingReplicas = []int32{2, 4, 1, 3}, []int32{3}, nil
			if got, err = s.AlterPartition(ctx, "t", topic.ID, 0, got, adding); err != nil || !got.Reassigning() {
				t.Fatalf("adding: %+v %v", got, err)
			}
			added := got
			added.ISR, added.AddingReplicas = []int32{1, 2, 4, 3}, nil
			if got, err = s.AlterPartition(ctx, "t", topic.ID, 0, got, added); err != nil || got.Reassigning() || s.Snapshot().Partition(tp, 0).Reassigning() {
				t.Fatalf("completing an addition: %+v %v", got, err)
			}
		})
	}
}

// AlterPartitions commits several partitions' changes in one transaction;
// a change computed from a stale state is refused alone, with
// AlterPartition's error, and the others are written. On both backends.
func TestAlterPartitionsCommitsTogetherAndRefusesStaleOnesAlone(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(cb.open(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			topic, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 3, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}, {2, 1}, {1, 2}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			snap := s.Snapshot()
			var changes []PartitionChange
			for p := int32(0); p < 3; p++ {
				cur := snap.Partition(topic, p)
				next := cur
				next.Leader, next.LeaderEpoch, next.ISR = 2, cur.LeaderEpoch+1, []int32{2}
				changes = append(changes, PartitionChange{Topic: "t", ID: topic.ID, Partition: p, Expected: cur, Next: next})
			}
			changes[1].Expected.PartitionEpoch = 7 // stale
			errs, err := s.AlterPartitions(ctx, changes)
			if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrPartitionChanged) || errs[2] != nil {
				t.Fatalf("AlterPartitions: %v %v", errs, err)
			}
			after := s.Snapshot()
			for p, want := range []int32{2, 2, 2} {
				got := after.Partition(topic, int32(p))
				if p == 1 {
					want = 2 // partition 1 is led by 2 from the start and was not changed
					if got.PartitionEpoch != 0 {
						t.Errorf("the stale change was written: %+v", got)
					}
				} else if got.PartitionEpoch != 1 || !slices.Equal(got.ISR, []int32{2}) {
					t.Errorf("partition %d: %+v", p, got)
				}
				if got.Leader != want {
					t.Errorf("partition %d led by %d", p, got.Leader)
				}
			}
		})
	}
}

// A change may add to the ISR only a broker that is live and not in
// controlled shutdown (Kafka's INELIGIBLE_REPLICA): a stopping follower
// still fetching must not get back in once the controller took it out.
// Taking a broker out needs no such check.
func TestAlterPartitionRefusesAnIneligibleReplicaInTheISR(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(cb.open(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			topic, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1, ReplicationFactor: 3, Replicas: [][]int32{{1, 2, 3}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cur := s.Snapshot().Partition(topic, 0)
			shrunk := cur
			shrunk.ISR = []int32{1, 2}
			if cur, err = s.AlterPartition(ctx, "t", topic.ID, 0, cur, shrunk); err != nil {
				t.Fatalf("taking a broker that is not live out of the ISR: %v", err)
			}
			back := cur
			back.ISR = []int32{1, 2, 3}
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 0, cur, back); !errors.Is(err, ErrIneligibleReplica) {
				t.Errorf("adding broker 3, not registered: %v, want ErrIneligibleReplica", err)
			}
			if err := s.RegisterLocalBroker(ctx, Broker{ID: 3, InControlledShutdown: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 0, cur, back); !errors.Is(err, ErrIneligibleReplica) {
				t.Errorf("adding broker 3, in controlled shutdown: %v, want ErrIneligibleReplica", err)
			}
			if err := s.RegisterLocalBroker(ctx, Broker{ID: 3, UncleanShutdown: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 0, cur, back); !errors.Is(err, ErrIneligibleReplica) {
				t.Errorf("adding broker 3, fenced after an unclean shutdown: %v, want ErrIneligibleReplica", err)
			}
			if err := s.RegisterLocalBroker(ctx, Broker{ID: 3}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.AlterPartition(ctx, "t", topic.ID, 0, cur, back); err != nil || !slices.Equal(got.ISR, []int32{1, 2, 3}) {
				t.Errorf("adding broker 3, live: %+v %v", got, err)
			}
		})
	}
}

// A leader's ISR addition names the broker epoch the follower fetched with
// (KIP-903): one of an earlier registration of the broker is refused
// (INELIGIBLE_REPLICA), so a fetch of a broker's previous run never takes
// its next run into the ISR; -1 (a fetch before v15) is not checked.
func TestAlterPartitionRefusesAStaleBrokerEpoch(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(cb.open(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			topic, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1, ReplicationFactor: 2, Replicas: [][]int32{{1, 2}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cur := s.Snapshot().Partition(topic, 0)
			shrunk := cur
			shrunk.ISR = []int32{1}
			if cur, err = s.AlterPartition(ctx, "t", topic.ID, 0, cur, shrunk); err != nil {
				t.Fatal(err)
			}
			back := cur
			back.ISR = []int32{1, 2}
			if err := s.RegisterLocalBroker(ctx, Broker{ID: 2}); err != nil {
				t.Fatal(err)
			}
			first := s.Snapshot().LiveBrokers()[2].Epoch
			if err := s.RegisterLocalBroker(ctx, Broker{ID: 2}); err != nil {
				t.Fatal(err)
			}
			second := s.Snapshot().LiveBrokers()[2].Epoch
			if first <= 0 || second <= first {
				t.Fatalf("broker epochs of two registrations: %d then %d, want growing and positive", first, second)
			}
			if _, err := s.AlterPartitionWithEpochs(ctx, "t", topic.ID, 0, cur, back, map[int32]int64{2: first}); !errors.Is(err, ErrIneligibleReplica) {
				t.Errorf("adding broker 2 with the epoch of its previous registration: %v, want ErrIneligibleReplica", err)
			}
			if got, err := s.AlterPartitionWithEpochs(ctx, "t", topic.ID, 0, cur, back, map[int32]int64{2: second}); err != nil || !slices.Equal(got.ISR, []int32{1, 2}) {
				t.Errorf("adding broker 2 with its current epoch: %+v %v", got, err)
			}
			unchecked := back
			unchecked.ISR = []int32{1}
			if cur, err = s.AlterPartition(ctx, "t", topic.ID, 0, s.Snapshot().Partition(topic, 0), unchecked); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AlterPartitionWithEpochs(ctx, "t", topic.ID, 0, cur, back, map[int32]int64{2: -1}); err != nil {
				t.Errorf("adding broker 2 with no epoch (-1): %v", err)
			}
		})
	}
}
