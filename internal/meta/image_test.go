package meta

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"kbroker/internal/auth"
)

// A change to one topic leaves the snapshot before it as it was, and the
// new snapshot shares every other topic with it.
func TestImageUpdateLeavesOlderSnapshotIntact(t *testing.T) {
	old, _, err := emptySnapshot().with(scaleBatch())
	if err != nil {
		t.Fatal(err)
	}
	before := old.Topic("scale-05000")
	next, delta, err := old.with(Batch{Rev: 2, Changes: []Change{
		{Key: "topics/scale-05000", Value: scaleTopicValue(5000, 11)},
		{Key: "config/topics/scale-00001", Deleted: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := old.Topic("scale-05000"); got != before || got.Partitions != scalePartitions {
		t.Fatalf("older snapshot's topic changed: %+v", got)
	}
	if old.TopicConfig("scale-00001") == nil {
		t.Fatal("older snapshot lost a topic's configs")
	}
	changed := next.Topic("scale-05000")
	if changed.Partitions != 11 || next.TopicByID(changed.ID) != changed || next.TopicByID(before.ID) != nil {
		t.Fatalf("new snapshot: %+v; by new id %v, by old id %v", changed, next.TopicByID(changed.ID), next.TopicByID(before.ID))
	}
	if next.Topic("scale-00007") != old.Topic("scale-00007") || next.TopicConfig("scale-00001") != nil {
		t.Fatal("untouched topic not shared, or deleted configs still there")
	}
	if next.TopicCount() != scaleTopics || old.TopicCount() != scaleTopics {
		t.Fatalf("topic counts %d, %d", next.TopicCount(), old.TopicCount())
	}
	if got := (Event{Delta: delta}).ChangedTopics(); !slices.Equal(got, []string{"scale-05000"}) {
		t.Fatalf("changed topics %v", got)
	}
}

// A topic deleted and recreated under the same name in one batch is found
// by its new id only.
func TestImageRecreatedTopicReplacesItsID(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "meta.db"))
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	first, err := s.CreateTopic(ctx, Topic{Name: "again", Partitions: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := Topic{Name: "again", ID: NewTopicID(), Partitions: 2}
	if err := s.Update(ctx, func(tx Tx) error { putJSON(tx, topicKey("again"), second); return nil }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if snap.TopicByID(first.ID) != nil || snap.TopicByID(second.ID) != snap.Topic("again") || snap.Topic("again").Partitions != 2 {
		t.Fatalf("by old id %v, by new id %v, by name %v", snap.TopicByID(first.ID), snap.TopicByID(second.ID), snap.Topic("again"))
	}
}

// A slow reconciler does not hold up writers, and is handed everything
// that changed while it worked in one event, from the snapshot it last saw
// to the newest.
func TestSlowReconcilerDoesNotBlockWriters(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "meta.db"))
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	release := make(chan struct{})
	events := make(chan Event, 10)
	s.Reconcile(func(ev Event) {
		events <- ev
		<-release
	})
	create := func(name string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := s.CreateTopic(ctx, Topic{Name: name, Partitions: 1}, map[string]string{"retention.ms": "1"})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("CreateTopic %s waited for a reconciler", name)
		}
	}
	create("first")
	ev := <-events // the reconciler now blocks on release
	if got := ev.ChangedTopics(); !slices.Equal(got, []string{"first"}) || ev.Cur.Topic("first") == nil {
		t.Fatalf("first event: topics %v", got)
	}
	for i := range 3 {
		create(fmt.Sprint("later-", i))
	}
	latest := s.Snapshot()
	close(release)
	ev = <-events
	got := ev.ChangedTopics()
	slices.Sort(got)
	if !slices.Equal(got, []string{"later-0", "later-1", "later-2"}) || len(ev.ChangedTopicConfigs()) != 3 {
		t.Fatalf("coalesced event: topics %v, configs %v", got, ev.ChangedTopicConfigs())
	}
	if ev.Old.Topic("first") == nil || ev.Old.Topic("later-0") != nil || ev.Cur != latest {
		t.Fatal("coalesced event does not run from the last snapshot handed over to the newest")
	}
}

// Produce and Fetch look a topic up by name or id on every request: the
// lookups allocate nothing.
func TestTopicLookupsDoNotAllocate(t *testing.T) {
	snap, _, err := emptySnapshot().with(scaleBatch())
	if err != nil {
		t.Fatal(err)
	}
	id := snap.Topic("scale-00042").ID
	allocs := testing.AllocsPerRun(1000, func() {
		if snap.Topic("scale-00042") == nil || snap.TopicByID(id) == nil || snap.TopicConfig("scale-00042") == nil {
			t.Fatal("lookup failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per lookup", allocs)
	}
}

// Both of a user's credentials deleted in one transaction take the user
// out of the snapshot, and the snapshot before still has them.
func TestScramCredentialsOfOneUserChangeTogether(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "meta.db"))
	defer s.Close()
	ctx := context.Background()
	upserts := []auth.Credential{
		{Mechanism: "SCRAM-SHA-256", Salt: []byte("s1"), StoredKey: []byte("k1"), ServerKey: []byte("v1"), Iterations: 4096},
		{Mechanism: "SCRAM-SHA-512", Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192},
	}
	if _, err := s.AlterScram(ctx, "alice", ScramChange{Upserts: upserts}); err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	if c, ok := before.ScramCredential("alice", "SCRAM-SHA-512"); !ok || c.Iterations != 8192 || len(before.ScramCredentials()["alice"]) != 2 {
		t.Fatalf("after upsert: %+v", before.ScramCredentials())
	}
	if _, err := s.AlterScram(ctx, "alice", ScramChange{Deletions: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Snapshot().ScramCredentials()["alice"]; ok {
		t.Fatalf("alice still listed after both deletions: %+v", s.Snapshot().ScramCredentials())
	}
	if len(before.ScramCredentials()["alice"]) != 2 {
		t.Fatal("the snapshot before the deletion lost alice's credentials")
	}
}

// A topic and its config overrides share one entry of the image, yet each
// comes and goes on its own: overrides written before their topic, or left
// after it, are counted and listed as overrides, never as a topic.
func TestTopicAndItsOverridesComeAndGoApart(t *testing.T) {
	topic := func(name string) Change {
		return Change{Key: "topics/" + name, Value: fmt.Appendf(nil, `{"id":"%s","partitions":1,"replicas":[[1]]}`, NewTopicID())}
	}
	conf := func(name string) Change {
		return Change{Key: "config/topics/" + name, Value: []byte(`{"retention.ms":"1000"}`)}
	}
	snap, _, err := emptySnapshot().with(Batch{Rev: 1, Changes: []Change{topic("a"), conf("a"), topic("b"), conf("early")}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(snap *Snapshot, topics, configs []string) {
		t.Helper()
		gotTopics := slices.Sorted(snap.TopicNames())
		var gotConfigs []string
		for name := range snap.AllTopicConfigs() {
			gotConfigs = append(gotConfigs, name)
		}
		slices.Sort(gotConfigs)
		if !slices.Equal(gotTopics, topics) || snap.TopicCount() != len(topics) ||
			!slices.Equal(gotConfigs, configs) || snap.TopicConfigCount() != len(configs) {
			t.Fatalf("topics %v (count %d), overrides %v (count %d); want %v and %v",
				gotTopics, snap.TopicCount(), gotConfigs, snap.TopicConfigCount(), topics, configs)
		}
		for _, name := range topics {
			if tp, c := snap.TopicWithConfig(name); tp != snap.Topic(name) || (c == nil) != (snap.TopicConfig(name) == nil) {
				t.Fatalf("TopicWithConfig(%q) disagrees with Topic and TopicConfig", name)
			}
		}
	}
	check(snap, []string{"a", "b"}, []string{"a", "early"})
	if snap.Topic("early") != nil || snap.TopicConfig("early")["retention.ms"] != "1000" {
		t.Fatal("overrides without a topic: not kept apart from topics")
	}

	next, _, err := snap.with(Batch{Rev: 2, Changes: []Change{
		{Key: "topics/a", Deleted: true}, // its overrides stay until deleted themselves
		topic("early"),
		{Key: "config/topics/early", Deleted: true},
		conf("b"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	check(next, []string{"b", "early"}, []string{"a", "b"})
	check(snap, []string{"a", "b"}, []string{"a", "early"}) // the older snapshot as it was

	last, _, err := next.with(Batch{Rev: 3, Changes: []Change{{Key: "config/topics/a", Deleted: true}}})
	if err != nil {
		t.Fatal(err)
	}
	check(last, []string{"b", "early"}, []string{"b"})
}
