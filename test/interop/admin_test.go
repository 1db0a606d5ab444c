package interop

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// topicMeta is what a fresh Metadata request (no client cache: kadm
// answers from kgo's metadata cache for up to 5s) says about one topic.
type topicMeta struct {
	partitions int
	id         [16]byte
	err        error
}

// metadata asks the broker directly about topics (all of them if none).
func metadata(t *testing.T, addr string, topics ...string) map[string]topicMeta {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, addr))
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	out := map[string]topicMeta{}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			t.Fatalf("metadata answered a topic without a name: %+v", rt)
		}
		out[*rt.Topic] = topicMeta{partitions: len(rt.Partitions), id: rt.TopicID, err: kerr.ErrorForCode(rt.ErrorCode)}
	}
	return out
}

// topicNames lists every topic the broker reports, with its partition count.
func topicNames(t *testing.T, addr string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, m := range metadata(t, addr) {
		if m.err != nil {
			t.Fatalf("list topics: %s: %v", name, m.err)
		}
		out[name] = m.partitions
	}
	return out
}

// listTopic returns the metadata of one existing topic.
func listTopic(t *testing.T, addr, topic string) topicMeta {
	t.Helper()
	m, ok := metadata(t, addr, topic)[topic]
	if !ok || m.err != nil {
		t.Fatalf("metadata for %s: %+v", topic, m)
	}
	return m
}

// CreateTopics with validate_only runs every check Kafka runs, answers as a
// real creation would, and creates nothing.
func TestCreateTopicsValidateOnly(t *testing.T) {
	addr := startBroker(t, nil)
	adm := newAdmin(t, addr)
	ctx := testkit.Context(t, 20*time.Second)
	testkit.CreateTopic(t, adm, "exists", 1, nil)

	resps, err := adm.ValidateCreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("1234")}, "would-be")
	if err != nil {
		t.Fatalf("validate create: %v", err)
	}
	r := resps["would-be"]
	if r.Err != nil {
		t.Fatalf("validate create of a valid topic: %v (%s)", r.Err, r.ErrMessage)
	}
	if r.NumPartitions != 3 || r.ReplicationFactor != 1 {
		t.Errorf("validate create answered %d partitions, replication factor %d; want 3 and 1", r.NumPartitions, r.ReplicationFactor)
	}
	if c, ok := r.Configs["retention.ms"]; !ok || c.Value == nil || *c.Value != "1234" {
		t.Errorf("validate create answered retention.ms = %+v, want the requested 1234", c)
	}

	for _, c := range []struct {
		name    string
		topic   string
		rf      int16
		configs map[string]*string
		want    error
	}{
		{"unknown config name", "bad-config", 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, kerr.InvalidConfig},
		{"invalid config value", "bad-value", 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig},
		{"replication factor 3 on one broker", "bad-rf", 3, nil, kerr.InvalidReplicationFactor},
		{"existing topic", "exists", 1, nil, kerr.TopicAlreadyExists},
		{"illegal name", "bad/name", 1, nil, kerr.InvalidTopicException},
	} {
		resps, err := adm.ValidateCreateTopics(ctx, 1, c.rf, c.configs, c.topic)
		if err != nil {
			t.Fatalf("%s: validate create: %v", c.name, err)
		}
		if got := resps[c.topic].Err; !errors.Is(got, c.want) {
			t.Errorf("%s: validate create answered %v, want %v", c.name, got, c.want)
		}
		// The same request for real is refused the same way.
		resps, err = adm.CreateTopics(ctx, 1, c.rf, c.configs, c.topic)
		if err != nil {
			t.Fatalf("%s: create: %v", c.name, err)
		}
		if got := resps[c.topic].Err; !errors.Is(got, c.want) {
			t.Errorf("%s: create answered %v, want %v", c.name, got, c.want)
		}
	}

	want := map[string]int{"exists": 1}
	if got := topicNames(t, addr); len(got) != len(want) || got["exists"] != 1 {
		t.Errorf("after validate-only and refused creations the broker lists %v, want only %v", got, want)
	}
	if err := metadata(t, addr, "would-be")["would-be"].err; !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("metadata for the validated-only topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	// It can still be created for real, with what validation answered.
	resp, err := adm.CreateTopic(ctx, 3, 1, nil, "would-be")
	if err != nil {
		t.Fatalf("create after validate: %v", err)
	}
	if resp.NumPartitions != 3 {
		t.Errorf("created with %d partitions, want 3", resp.NumPartitions)
	}
}

// CreatePartitions raises a partition count (the new partitions are usable
// at once) and refuses to lower it or keep it, as Kafka does with
// INVALID_PARTITIONS.
func TestCreatePartitions(t *testing.T) {
	const topic = "grow"
	addr := startBroker(t, nil)
	adm := newAdmin(t, addr)
	ctx := testkit.Context(t, 20*time.Second)
	testkit.CreateTopic(t, adm, topic, 2, nil)

	resps, err := adm.ValidateCreatePartitions(ctx, 4, topic)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("validate create partitions: %v", err)
	}
	if got := topicNames(t, addr)[topic]; got != 2 {
		t.Errorf("after validate-only create partitions the topic has %d partitions, want 2", got)
	}

	resps, err = adm.UpdatePartitions(ctx, 6, topic)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		t.Fatalf("raise to 6 partitions: %v", err)
	}
	if got := topicNames(t, addr)[topic]; got != 6 {
		t.Errorf("after raising, metadata shows %d partitions, want 6", got)
	}
	cl := testkit.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 5, Value: []byte("in a new partition")})
	if r, err := res.First(); err != nil || r.Offset != 0 {
		t.Errorf("produce to new partition 5: offset %d, %v; want offset 0", r.Offset, err)
	}

	for _, c := range []struct {
		name  string
		count int
	}{{"lower to 3", 3}, {"keep 6", 6}} {
		resps, err = adm.UpdatePartitions(ctx, c.count, topic)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := resps[topic].Err; !errors.Is(got, kerr.InvalidPartitions) {
			t.Errorf("%s: answered %v, want INVALID_PARTITIONS", c.name, got)
		}
	}
	resps, err = adm.UpdatePartitions(ctx, 8, "no-such-topic")
	if err != nil {
		t.Fatalf("grow missing topic: %v", err)
	}
	if got := resps["no-such-topic"].Err; !errors.Is(got, kerr.UnknownTopicOrPartition) {
		t.Errorf("grow missing topic: answered %v, want UNKNOWN_TOPIC_OR_PARTITION", got)
	}
	if got := topicNames(t, addr)[topic]; got != 6 {
		t.Errorf("after refused changes the topic has %d partitions, want 6", got)
	}
}

// A deleted topic disappears from Metadata and its data with it: a topic
// recreated under the same name is a new topic (new id) starting at offset 0,
// also after a restart.
func TestDeleteTopicThenRecreate(t *testing.T) {
	const topic = "reborn"
	props := testProps(t.TempDir(), nil)
	b := brokertest.StartWith(t, props)
	addr := b.Addr()
	adm := newAdmin(t, addr)
	ctx := testkit.Context(t, 30*time.Second)
	testkit.CreateTopic(t, adm, topic, 2, nil)
	oldID := listTopic(t, addr, topic).id

	cl := testkit.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	dr, err := adm.DeleteTopic(ctx, topic)
	if err != nil {
		t.Fatalf("delete: %v (%s)", err, dr.ErrMessage)
	}
	if _, ok := topicNames(t, addr)[topic]; ok {
		t.Errorf("deleted topic still listed")
	}
	if err := metadata(t, addr, topic)[topic].err; !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("metadata for deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	dr, err = adm.DeleteTopic(ctx, topic)
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting it again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	testkit.CreateTopic(t, adm, topic, 2, nil)
	if newID := listTopic(t, addr, topic).id; newID == oldID {
		t.Errorf("recreated topic has the deleted topic's id %v", oldID)
	}
	for p, end := range endOffsets(t, adm, topic) {
		if end != 0 {
			t.Errorf("recreated topic partition %d ends at %d, want 0", p, end)
		}
	}
	// A new client: the first one cached the deleted topic's id.
	cl = testkit.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("new")})
	if r, err := res.First(); err != nil || r.Offset != 0 {
		t.Fatalf("first produce to recreated topic: offset %d, %v; want offset 0", r.Offset, err)
	}
	checkOnlyNew := func(addr string) {
		t.Helper()
		got := consumeAll(t, addr, topic, 10*time.Second)
		if len(got[0]) != 1 || string(got[0][0].Value) != "new" || got[0][0].Offset != 0 || len(got[1]) != 0 {
			t.Errorf("recreated topic holds %s; want only the new record at offset 0 of partition 0", progress(got))
		}
	}
	checkOnlyNew(b.Addr())

	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b = brokertest.StartWith(t, props)
	checkOnlyNew(b.Addr())
	if td := listTopic(t, b.Addr(), topic); td.partitions != 2 {
		t.Errorf("after restart the recreated topic has %d partitions, want 2", td.partitions)
	}
}
