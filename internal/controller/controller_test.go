package controller

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
	"kbroker/policy"
)

// newController is a controller of a single broker over a real bbolt store.
func newController(t *testing.T, props config.Properties, createPolicy policy.CreateTopic) (*Controller, *meta.Store) {
	t.Helper()
	all := config.Properties{"log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0"}
	for k, v := range props {
		all[k] = v
	}
	broker, err := config.NewBroker(all)
	if err != nil {
		t.Fatal(err)
	}
	store := testkit.BoltStore(t)
	discard := slog.New(slog.DiscardHandler)
	configs := dynconfig.New(dynconfig.Options{Broker: broker, Store: store, Logger: discard, Audit: discard})
	return New(broker, store, configs, createPolicy, discard), store
}

type refuseAll struct{}

func (refuseAll) ValidateCreateTopic(policy.CreateTopicRequest) error {
	return errors.New("no topics today")
}

// A topic asked for with -1 counts gets the broker's defaults, is placed on
// the one live broker, and a second creation is refused as existing.
func TestCreateTopicFillsDefaultsPlacesAndRefusesTwice(t *testing.T) {
	c, store := newController(t, config.Properties{"num.partitions": "3"}, nil)
	ctx := context.Background()
	spec := &TopicSpec{Name: "orders", Partitions: -1, ReplicationFactor: -1}
	topic, err := c.CreateTopic(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if topic.Partitions != 3 || len(topic.Replicas) != 3 || topic.Replicas[0][0] != c.broker.NodeID {
		t.Errorf("created %+v, want 3 partitions led by broker %d", topic, c.broker.NodeID)
	}
	_, err = c.CreateTopic(ctx, &TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 1})
	if !errors.Is(err, meta.ErrTopicExists) || err.Error() != "Topic 'orders' already exists." {
		t.Errorf("second creation: %v, want meta.ErrTopicExists with Kafka's message", err)
	}
	if store.Snapshot().Topic("orders").Partitions != 3 {
		t.Error("the refused creation changed the topic")
	}
}

// Every refusal comes before the store is written: bad names, counts,
// replication factors, configs, and the create-topic policy.
func TestCheckTopicRefusesBeforeWriting(t *testing.T) {
	c, store := newController(t, nil, nil)
	snap := store.Snapshot()
	for _, tc := range []struct {
		spec TopicSpec
		want error
	}{
		{TopicSpec{Name: "a/b", Partitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{TopicSpec{Name: "t", Partitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 2}, ErrInvalidReplicationFactor},
		{TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"no.such.config": "1"}}, ErrInvalidConfig},
		{TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1, Assignment: map[int32][]int32{0: {1}}}, ErrCountsWithAssignment},
		{TopicSpec{Name: "t", Partitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{1: {1}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "t", Partitions: maxRecordsPerUserOp, ReplicationFactor: 1}, ErrPolicyViolation},
	} {
		if err := c.CheckTopic(snap, &tc.spec); !errors.Is(err, tc.want) {
			t.Errorf("CheckTopic(%+v) = %v, want %v", tc.spec, err, tc.want)
		}
	}
	strict, store := newController(t, nil, refuseAll{})
	if _, err := strict.CreateTopic(context.Background(), &TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrPolicyViolation) || err.Error() != "no topics today" {
		t.Errorf("policy refusal: %v", err)
	}
	if store.Snapshot().Topic("t") != nil {
		t.Error("a topic the policy refused was stored")
	}
}

// A partition increase is checked, then stored with placement of the new
// partitions; a decrease is refused.
func TestPartitionIncrease(t *testing.T) {
	c, store := newController(t, nil, nil)
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, &TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckPartitions(store.Snapshot(), PartitionIncrease{Topic: "t", Count: 1}); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("same count: %v, want ErrInvalidPartitions", err)
	}
	if _, err := c.CheckPartitions(store.Snapshot(), PartitionIncrease{Topic: "gone", Count: 2}); !errors.Is(err, meta.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v, want meta.ErrUnknownTopic", err)
	}
	checked, err := c.CheckPartitions(store.Snapshot(), PartitionIncrease{Topic: "t", Count: 4})
	if err != nil || checked.Added != 3 {
		t.Fatalf("CheckPartitions = %+v, %v; want 3 added", checked, err)
	}
	if err := c.CreatePartitions(ctx, checked); err != nil {
		t.Fatal(err)
	}
	if got := store.Snapshot().Topic("t"); got.Partitions != 4 || len(got.Replicas) != 4 {
		t.Errorf("after the increase: %+v", got)
	}
}

// A batch creates only the topics nothing refused, in one call; a name
// given twice is refused at each mention; a deleted-by-id lookup of an
// unknown id is UNKNOWN_TOPIC_ID, by name UNKNOWN_TOPIC_OR_PARTITION.
func TestCreateTopicsBatchDuplicatesAndTopicToDelete(t *testing.T) {
	c, store := newController(t, nil, nil)
	ctx := context.Background()
	dup := DuplicateTopics("cli", []string{"a", "b", "a"})
	if dup[0] == nil || dup[1] != nil || dup[2] == nil || !errors.Is(dup[0], ErrDuplicateTopic) {
		t.Fatalf("duplicates: %v", dup)
	}
	specs := []*TopicSpec{
		{Name: "a", Partitions: 1, ReplicationFactor: 1},
		{Name: "b", Partitions: 2, ReplicationFactor: 1},
		nil,
	}
	errs := []error{dup[0], nil, errors.New("refused earlier")}
	created := c.CreateTopics(ctx, store.Snapshot(), specs, errs)
	if created[0] != nil || created[1] == nil || created[1].Partitions != 2 || created[2] != nil || errs[1] != nil {
		t.Fatalf("created %v, errs %v: want only b", created, errs)
	}
	snap := store.Snapshot()
	if snap.Topic("a") != nil {
		t.Error("a refused topic was created")
	}
	name := "b"
	if topic, byName, err := TopicToDelete(snap, &name, [16]byte{}); err != nil || !byName || topic.Name != "b" {
		t.Errorf("by name: %v %v %v", topic, byName, err)
	}
	if topic, byName, err := TopicToDelete(snap, nil, created[1].ID); err != nil || byName || topic.Name != "b" {
		t.Errorf("by id: %v %v %v", topic, byName, err)
	}
	missing := "nope"
	if _, _, err := TopicToDelete(snap, &missing, [16]byte{}); !errors.Is(err, meta.ErrUnknownTopic) {
		t.Errorf("unknown name: %v", err)
	}
	if _, _, err := TopicToDelete(snap, nil, [16]byte{1}); !errors.Is(err, ErrUnknownTopicID) {
		t.Errorf("unknown id: %v", err)
	}
}
