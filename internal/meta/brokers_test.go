package meta

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

func TestLocalRegistrationReplacesEarlierRunsAndSnapshotListsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s := openStore(t, path)
	if err := s.RegisterLocalBroker(ctx, Broker{ID: 7, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 1}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, path)
	defer s.Close()
	if err := s.RegisterLocalBroker(ctx, Broker{ID: 3}); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().LiveBrokers(); len(got) != 1 || got[3] == nil {
		t.Fatalf("brokers after re-registering as node 3: %v", got)
	}
}

func TestPlacementIsStoredWithTheTopicAndOldRecordsStayReadable(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "meta.db"))
	defer s.Close()
	// A record from before placement: no replicas, led by whoever reads it.
	if _, err := s.CreateTopic(ctx, Topic{Name: "old", Partitions: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPartitions(ctx, "old", 3, [][]int32{{5}}); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	old := snap.Topic("old")
	if got := []int32{snap.Leader(old, 0, 9), snap.Leader(old, 1, 9), snap.Leader(old, 2, 9)}; !slices.Equal(got, []int32{9, 9, 5}) {
		t.Errorf("leaders of the grown old topic: %v", got)
	}
	if err := s.AddPartitions(ctx, "old", 5, [][]int32{{1}}); err == nil {
		t.Error("AddPartitions with fewer placements than new partitions succeeded")
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "new", Partitions: 2, Replicas: [][]int32{{2}, {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); snap.Leader(snap.Topic("new"), 1, 9) != 1 {
		l := snap.Leader(snap.Topic("new"), 1, 9)
		t.Errorf("leader of new-1 = %d, want 1", l)
	}
}
