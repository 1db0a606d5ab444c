package meta

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestGroupConfigsAreTheirOwnEntries: a group's overrides live under
// config/groups/<group> (escaped), need no group, change without touching
// the older snapshot, and a deletion removes them.
func TestGroupConfigsAreTheirOwnEntries(t *testing.T) {
	snap, _, err := emptySnapshot().with(Batch{Rev: 1, Changes: []Change{
		{Key: "config/groups/a", Value: []byte(`{"consumer.session.timeout.ms":"50000"}`)},
		{Key: "config/groups/with%2Fslash", Value: []byte(`{"share.auto.offset.reset":"earliest"}`)},
		{Key: "config/groups/a/nested", Value: []byte(`{}`)}, // not a group entry
	}})
	if err != nil {
		t.Fatal(err)
	}
	names := func(s *Snapshot) []string {
		var out []string
		for g := range s.AllGroupConfigs() {
			out = append(out, g)
		}
		slices.Sort(out)
		return out
	}
	if got := names(snap); !slices.Equal(got, []string{"a", "with/slash"}) || snap.GroupConfig("a")["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("groups with configs %v, a = %v", got, snap.GroupConfig("a"))
	}
	if snap.TopicConfig("a") != nil || snap.BrokerConfig("a") != nil {
		t.Fatal("a group's overrides leaked into topic or broker configs")
	}
	next, _, err := snap.with(Batch{Rev: 2, Changes: []Change{{Key: "config/groups/a", Deleted: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(next); !slices.Equal(got, []string{"with/slash"}) || next.GroupConfig("a") != nil {
		t.Fatalf("after deleting a: %v", got)
	}
	if snap.GroupConfig("a") == nil {
		t.Fatal("the older snapshot lost a's overrides")
	}
}

// TestGroupConfigsCompareAndSetOnBolt: the store writes a group's
// overrides with the compare-and-set the config plane uses, and reads them
// back after reopening.
func TestGroupConfigsCompareAndSetOnBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func() *Store {
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
	s := open()
	cur, version, err := s.ReadConfigs(ctx, GroupConfigs, "g")
	if err != nil || len(cur) != 0 {
		t.Fatalf("ReadConfigs of a group without configs: %v %v", cur, err)
	}
	if err := s.CompareAndSetConfigs(ctx, GroupConfigs, "g", version, map[string]string{"consumer.heartbeat.interval.ms": "6000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CompareAndSetConfigs(ctx, GroupConfigs, "g", version, map[string]string{"consumer.heartbeat.interval.ms": "7000"}); err != ErrConfigsChanged {
		t.Fatalf("a stale version must be refused, got %v", err)
	}
	s.Close()
	s = open()
	defer s.Close()
	if v := s.Snapshot().GroupConfig("g")["consumer.heartbeat.interval.ms"]; v != "6000" {
		t.Fatalf("after reopening: %q", v)
	}
}
