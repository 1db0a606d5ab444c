package meta

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
)

// TestAlterPartitionCompareAndSwap: a partition starts in its initial state
// (all replicas in sync, the first leading, epochs 0); a change from the
// state read commits and bumps the partition epoch; a change computed from
// a state since replaced, or by a leader of an older epoch, is refused and
// writes nothing; of changes racing from one state exactly one wins; and a
// deleted topic's records go with it. On both backends.
func TestAlterPartitionCompareAndSwap(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(cb.open(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			topic, err := s.CreateTopic(ctx, Topic{Name: "t", Partitions: 2, ReplicationFactor: 3, Replicas: [][]int32{{1, 2, 3}, {2, 3, 1}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Snapshot().Partition(topic, 1)
			if st.Leader != 2 || !slices.Equal(st.ISR, []int32{2, 3, 1}) || st.LeaderEpoch != 0 || st.PartitionEpoch != 0 {
				t.Fatalf("initial state %+v", st)
			}
			shrunk := st
			shrunk.ISR = []int32{2, 3}
			got, err := s.AlterPartition(ctx, "t", topic.ID, 1, st, shrunk)
			if err != nil || got.PartitionEpoch != 1 {
				t.Fatalf("shrink: %+v %v", got, err)
			}
			if cur := s.Snapshot().Partition(topic, 1); !slices.Equal(cur.ISR, []int32{2, 3}) || cur.PartitionEpoch != 1 {
				t.Fatalf("after the shrink the snapshot has %+v", cur)
			}
			// From the state before the shrink: stale.
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 1, st, st); !errors.Is(err, ErrPartitionChanged) {
				t.Errorf("stale partition epoch: %v, want ErrPartitionChanged", err)
			}
			// A leader change, then the old leader's ISR change is fenced.
			elected := got
			elected.Leader, elected.LeaderEpoch = 3, got.LeaderEpoch+1
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 1, got, elected); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AlterPartition(ctx, "t", topic.ID, 1, got, got); !errors.Is(err, ErrFencedLeaderEpoch) {
				t.Errorf("old leader epoch: %v, want ErrFencedLeaderEpoch", err)
			}
			if _, err := s.AlterPartition(ctx, "t", TopicID{9}, 1, got, got); !errors.Is(err, ErrUnknownPartition) {
				t.Errorf("wrong topic id: %v, want ErrUnknownPartition", err)
			}
			// Racing changes from one state: one commits.
			base := s.Snapshot().Partition(topic, 0)
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() {
					next := base
					next.ISR = []int32{1, int32(2 + i%2)}
					_, errs[i] = s.AlterPartition(ctx, "t", topic.ID, 0, base, next)
				})
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, ErrPartitionChanged):
					t.Errorf("a racing change failed with %v", err)
				}
			}
			if won != 1 || s.Snapshot().Partition(topic, 0).PartitionEpoch != 1 {
				t.Errorf("%d racing changes won (errors %v), want exactly 1", won, errs)
			}
			if err := s.DeleteTopic(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			if n := s.Snapshot().partitions.Len(); n != 0 {
				t.Errorf("%d partition records outlived their topic", n)
			}
		})
	}
}
