package meta

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

func openStore(t *testing.T, path string) *Store {
	t.Helper()
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTopicsAndConfigsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s := openStore(t, path)
	id, err := s.EnsureClusterID(ctx)
	if err != nil || id == "" {
		t.Fatalf("cluster id %q: %v", id, err)
	}
	created, err := s.CreateTopic(ctx, Topic{Name: "a/b c", Partitions: 3, ReplicationFactor: 1}, map[string]string{"retention.ms": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, Topic{Name: "a/b c", Partitions: 1}, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := s.SetPartitionCount(ctx, "a/b c", 2); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("lowering partitions: %v", err)
	}
	if err := s.SetPartitionCount(ctx, "a/b c", 5); err != nil {
		t.Fatal(err)
	}
	err = s.UpdateConfigs(ctx, BrokerConfigs, "", func(m map[string]string) (map[string]string, error) {
		m["log.retention.ms"] = "9"
		return m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateConfigs(ctx, TopicConfigs, "missing", func(m map[string]string) (map[string]string, error) { return m, nil }); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("config of a missing topic: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	defer s.Close()
	snap := s.Snapshot()
	got := snap.Topic("a/b c")
	if snap.ClusterID != id || got == nil || got.ID != created.ID || got.Partitions != 5 || snap.TopicByID(created.ID) != got {
		t.Fatalf("after reopen: cluster %q topic %+v", snap.ClusterID, got)
	}
	if snap.TopicConfig("a/b c")["retention.ms"] != "1" || snap.BrokerConfig("")["log.retention.ms"] != "9" {
		t.Fatalf("configs after reopen: %v %v", snap.TopicConfig("a/b c"), snap.BrokerConfig(""))
	}
	if err := s.DeleteTopic(ctx, "a/b c"); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); snap.TopicCount() != 0 || snap.TopicByID(created.ID) != nil || snap.TopicConfigCount() != 0 {
		t.Fatalf("delete left %d topics, %v by id, %d with configs", snap.TopicCount(), snap.TopicByID(created.ID), snap.TopicConfigCount())
	}
}

func TestListenersSeeEveryChangeInOrder(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "meta.db"))
	defer s.Close()
	events := make(chan Event, 10)
	s.OnChange(func(e Event) { events <- e })
	ctx := context.Background()
	s.CreateTopic(ctx, Topic{Name: "t", Partitions: 1}, map[string]string{"x": "1"})
	s.DeleteTopic(ctx, "t")
	for i, want := range []string{"t", "t"} {
		select {
		case e := <-events:
			if got := e.ChangedTopics(); len(got) != 1 || got[0] != want || e.Cur.Rev <= e.Old.Rev {
				t.Fatalf("event %d: topics %v revs %d→%d", i, got, e.Old.Rev, e.Cur.Rev)
			}
			if i == 0 && len(e.ChangedTopicConfigs()) != 1 {
				t.Fatalf("creation with configs must report the config change too")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
}

func TestProducerIDBlocksNeverRepeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := openStore(t, path)
	a, _ := s.AllocateProducerIDs(context.Background(), 1000)
	b, _ := s.AllocateProducerIDs(context.Background(), 1000)
	s.Close()
	s = openStore(t, path)
	defer s.Close()
	c, _ := s.AllocateProducerIDs(context.Background(), 1000)
	if a != 0 || b != 1000 || c != 2000 {
		t.Fatalf("blocks start at %d, %d, %d", a, b, c)
	}
}

func TestQuotaEntitiesStoredByPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s := openStore(t, path)
	set := func(p string, v map[string]float64) error {
		errs, err := s.UpdateQuotas(ctx, []string{p}, func(int, map[string]float64) (map[string]float64, error) { return v, nil })
		if err != nil {
			return err
		}
		return errs[0]
	}
	for _, p := range []string{"users/alice", "users/alice/clients/c1", "users/<default>/clients/<default>", "clients/c%2A", "ips/127.0.0.1"} {
		if err := set(p, map[string]float64{"producer_byte_rate": 1024}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, bad := range []string{"users", "users/", "users/a/clients", "topics/t", "groups/g", "users/a/b/c"} {
		if err := set(bad, map[string]float64{"x": 1}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
	if err := set("users/alice", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, path)
	defer s.Close()
	q := s.Snapshot().QuotaOverrides()
	if len(q) != 4 || q["users/alice/clients/c1"]["producer_byte_rate"] != 1024 || q["users/alice"] != nil {
		t.Fatalf("quotas after reopen: %v", q)
	}
}
