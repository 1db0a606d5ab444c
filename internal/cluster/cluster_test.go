package cluster_test

// Cluster tests: a real etcd in the test process and three in-process
// brokers that share their metadata through it, driven with franz-go.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

type testCluster struct {
	etcd    *etcdtest.Etcd
	brokers []*broker.Broker // index i is node.id i+1
}

// startCluster runs an etcd and n brokers (node.id 1..n) on it; extra
// props apply to every broker, perNode to one.
func startCluster(t *testing.T, n int, extra config.Properties, perNode map[int32]config.Properties) *testCluster {
	t.Helper()
	tc := &testCluster{etcd: etcdtest.Start(t)}
	for id := int32(1); id <= int32(n); id++ {
		props := config.Properties{
			"node.id":                          strconv.Itoa(int(id)),
			"metadata.etcd.endpoints":          tc.etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"metadata.etcd.request.timeout.ms": "1000",
			"quota.window.size.seconds":        "1",
			"log.retention.check.interval.ms":  "600000",
		}
		for k, v := range extra {
			props[k] = v
		}
		for k, v := range perNode[id] {
			props[k] = v
		}
		tc.brokers = append(tc.brokers, brokertest.Start(t, props))
	}
	return tc
}

// waitTopic waits until every broker's snapshot has the topic: admin
// requests check against the receiving broker's snapshot, which follows etcd
// through the watch.
func (tc *testCluster) waitTopic(t *testing.T, name string) {
	t.Helper()
	for id := int32(1); id <= int32(len(tc.brokers)); id++ {
		eventually(t, fmt.Sprintf("broker %d to see topic %s", id, name), func() bool {
			return metadata(t, tc.addr(id), name).Topics[0].ErrorCode == 0
		})
	}
}

func (tc *testCluster) addr(id int32) string { return tc.brokers[id-1].Addr() }

func (tc *testCluster) addrs() []string {
	var out []string
	for _, b := range tc.brokers {
		out = append(out, b.Addr())
	}
	return out
}

// send sends req to exactly the broker at addr (not wherever franz-go
// would route it).
func send[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	resp, err := trySend(t, addr, req)
	if err != nil {
		t.Fatalf("%s to %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return resp.(R)
}

func trySend(t *testing.T, addr string, req kmsg.Request) (kmsg.Response, error) {
	cl := testkit.Client(t, "", kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(testkit.Context(t, 10*time.Second), req)
}

func metadata(t *testing.T, addr string, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
	}
	return send[*kmsg.MetadataResponse](t, addr, req)
}

func brokerIDs(resp *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// createTopic creates a topic through the broker at addr and fails the
// test on any error code.
func createTopic(t *testing.T, addr, name string, partitions int32, assignment ...int32) *kmsg.CreateTopicsResponse {
	t.Helper()
	resp := tryCreateTopic(t, addr, name, partitions, 1, assignment...)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s: %v (%s)", name, err, deref(resp.Topics[0].ErrorMessage))
	}
	return resp
}

// tryCreateTopic asks for partitions at rf, or one partition per id of
// assignment on that broker.
func tryCreateTopic(t *testing.T, addr, name string, partitions int32, rf int16, assignment ...int32) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	if len(assignment) > 0 {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p, id := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), []int32{id}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
	}
	req.Topics = append(req.Topics, rt)
	return send[*kmsg.CreateTopicsResponse](t, addr, req)
}

func leaders(resp *kmsg.MetadataResponse) map[int32]int32 {
	out := map[int32]int32{}
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestMetadataFromAnyBrokerListsAllBrokersAndOneController(t *testing.T) {
	tc := startCluster(t, 3, nil, map[int32]config.Properties{2: {"broker.rack": "r2"}})
	var controllers []int32
	for id := int32(1); id <= 3; id++ {
		eventually(t, "all three brokers in broker "+strconv.Itoa(int(id))+"'s metadata", func() bool {
			return slices.Equal(brokerIDs(metadata(t, tc.addr(id))), []int32{1, 2, 3})
		})
		resp := metadata(t, tc.addr(id))
		for _, b := range resp.Brokers {
			if want := tc.addr(b.NodeID); fmt.Sprintf("%s:%d", b.Host, b.Port) != want {
				t.Errorf("broker %d advertised at %s:%d, listens on %s", b.NodeID, b.Host, b.Port, want)
			}
			if b.NodeID == 2 && deref(b.Rack) != "r2" {
				t.Errorf("broker 2's rack is %q", deref(b.Rack))
			}
		}
		controllers = append(controllers, resp.ControllerID)

		dc := send[*kmsg.DescribeClusterResponse](t, tc.addr(id), kmsg.NewPtrDescribeClusterRequest())
		if len(dc.Brokers) != 3 || dc.ControllerID != resp.ControllerID {
			t.Errorf("DescribeCluster from %d: %d brokers, controller %d; Metadata said controller %d", id, len(dc.Brokers), dc.ControllerID, resp.ControllerID)
		}
	}
	if controllers[0] < 1 || controllers[0] > 3 || controllers[1] != controllers[0] || controllers[2] != controllers[0] {
		t.Fatalf("controllers reported by brokers 1, 2, 3: %v; want one live broker named by all", controllers)
	}
}

func TestCreateTopicSpreadsLeadersAndOnlyLeadersServe(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopic(t, tc.addr(1), "spread", 6)
	for id := int32(2); id <= 3; id++ { // admin requests read the receiving broker's snapshot
		eventually(t, "every broker to see the topic", func() bool { return len(leaders(metadata(t, tc.addr(id), "spread"))) == 6 })
	}
	count := map[int32]int{}
	for _, l := range leaders(metadata(t, tc.addr(3), "spread")) {
		count[l]++
	}
	if count[1] != 2 || count[2] != 2 || count[3] != 2 {
		t.Fatalf("leaders of 6 partitions over 3 brokers: %v; want 2 each", count)
	}

	// CreatePartitions on another broker places the new ones too.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 10000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "spread", 9
	cp.Topics = append(cp.Topics, cpt)
	if r := send[*kmsg.CreatePartitionsResponse](t, tc.addr(2), cp); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	eventually(t, "broker 1 to see 9 partitions", func() bool { return len(leaders(metadata(t, tc.addr(1), "spread"))) == 9 })
	lead := leaders(metadata(t, tc.addr(1), "spread"))
	count = map[int32]int{}
	for _, l := range lead {
		count[l]++
	}
	if len(lead) != 9 || count[1] != 3 || count[2] != 3 || count[3] != 3 {
		t.Fatalf("after growing to 9 partitions, leaders %v", lead)
	}

	// A broker that does not lead a partition refuses its data.
	notLeader := lead[0]%3 + 1
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "spread"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if code := send[*kmsg.ListOffsetsResponse](t, tc.addr(notLeader), lo).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("ListOffsets of partition 0 on non-leader %d: %v, want NOT_LEADER_OR_FOLLOWER", notLeader, kerr.ErrorForCode(code))
	}
	if code := send[*kmsg.ListOffsetsResponse](t, tc.addr(lead[0]), lo).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Errorf("ListOffsets of partition 0 on its leader: %v", kerr.ErrorForCode(code))
	}
	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "spread", metadata(t, tc.addr(1), "spread").Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	if code := send[*kmsg.FetchResponse](t, tc.addr(notLeader), fr).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("Fetch of partition 0 on non-leader %d: %v, want NOT_LEADER_OR_FOLLOWER", notLeader, kerr.ErrorForCode(code))
	}

	// Producing through one broker and consuming through another: franz-go
	// sends each partition's batches to its leader.
	producer := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(2)), kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testkit.Context(t, 20*time.Second)
	for p := int32(0); p < 9; p++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint("v", p))}).FirstErr(); err != nil {
			t.Fatalf("producing to partition %d: %v", p, err)
		}
	}
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < 9; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	consumer := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(3)), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"spread": parts}))
	got := map[int32]string{}
	for len(got) < 9 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[r.Partition] = string(r.Value) })
	}
	for p := int32(0); p < 9; p++ {
		if got[p] != fmt.Sprint("v", p) {
			t.Errorf("partition %d consumed %q", p, got[p])
		}
	}

	// Replication factors: no more than the live brokers, as Kafka says
	// (replication_test.go has the accepted ones).
	for rf, want := range map[int16]string{4: "only 3 broker(s) are registered"} {
		r := tryCreateTopic(t, tc.addr(1), "rf"+strconv.Itoa(int(rf)), 1, rf)
		if r.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code || !strings.Contains(deref(r.Topics[0].ErrorMessage), want) {
			t.Errorf("RF %d: %v %q; want INVALID_REPLICATION_FACTOR mentioning %q", rf, kerr.ErrorForCode(r.Topics[0].ErrorCode), deref(r.Topics[0].ErrorMessage), want)
		}
	}
}

func TestRackAwarePlacementAlternatesRacks(t *testing.T) {
	tc := startCluster(t, 3, nil, map[int32]config.Properties{
		1: {"broker.rack": "a"}, 2: {"broker.rack": "a"}, 3: {"broker.rack": "b"},
	})
	createTopic(t, tc.addr(1), "racks", 4)
	lead := leaders(metadata(t, tc.addr(1), "racks"))
	rack := map[int32]string{1: "a", 2: "a", 3: "b"}
	for p := int32(0); p < 3; p++ {
		// The rack-alternated order is 1(a), 3(b), 2(a): rack b comes up
		// every other partition except where the cycle wraps.
		if rack[lead[p]] == rack[lead[p+1]] && !(lead[p] == 2 && lead[p+1] == 1) {
			t.Errorf("partitions %d and %d both on rack %s: %v", p, p+1, rack[lead[p]], lead)
		}
	}
}

func alterTopicConfig(t *testing.T, addr, topic, key, value string) error {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	if topic == "" || topic[0] >= '0' && topic[0] <= '9' {
		res.ResourceType = kmsg.ConfigResourceTypeBroker
	}
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := trySend(t, addr, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return fmt.Errorf("%w: %s", err, deref(r.ErrorMessage))
	}
	return nil
}

// describeConfigs returns name → entry of a topic, or of a broker when name
// is a number.
func describeConfigs(t *testing.T, addr, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
	if _, err := strconv.Atoi(name); err == nil {
		res.ResourceType = kmsg.ConfigResourceTypeBroker
	}
	req.Resources = append(req.Resources, res)
	r := send[*kmsg.DescribeConfigsResponse](t, addr, req).Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		t.Fatalf("describing %s on %s: %v %s", name, addr, err, deref(r.ErrorMessage))
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		out[c.Name] = c
	}
	return out
}

func alterClientQuota(t *testing.T, addr, clientID, key string, value float64) error {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ec.Type, ec.Name = "client-id", kmsg.StringPtr(clientID)
	e.Entity = append(e.Entity, ec)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	resp, err := trySend(t, addr, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.AlterClientQuotasResponse).Entries[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return fmt.Errorf("%w: %s", err, deref(r.ErrorMessage))
	}
	return nil
}

type throttleHook struct{ maxMs atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if ms := d.Milliseconds(); ms > h.maxMs.Load() {
		h.maxMs.Store(ms)
	}
}

func TestAlterOnOneBrokerIsSeenAndEnforcedOnAnother(t *testing.T) {
	tc := startCluster(t, 3, nil, map[int32]config.Properties{2: {"broker.rack": "r2", "custom.unknown.key": "secret-ish"}})
	createTopic(t, tc.addr(1), "cfg", 0, 2) // one partition, led by broker 2
	tc.waitTopic(t, "cfg")

	// A topic config altered through broker 1 is seen and applied by 2.
	if err := alterTopicConfig(t, tc.addr(1), "cfg", "max.message.bytes", "200"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 2 to describe max.message.bytes=200", func() bool {
		return deref(describeConfigs(t, tc.addr(2), "cfg")["max.message.bytes"].Value) == "200"
	})
	producer := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(3)), kgo.DefaultProduceTopic("cfg"), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	err := producer.ProduceSync(testkit.Context(t, 10*time.Second), &kgo.Record{Value: make([]byte, 1000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("producing 1000 bytes to broker 2 after max.message.bytes=200 set through broker 1: %v, want MESSAGE_TOO_LARGE", err)
	}

	// A quota lowered through broker 1 throttles a producer of broker 2.
	if err := alterClientQuota(t, tc.addr(1), "slow", "producer_byte_rate", 4096); err != nil {
		t.Fatal(err)
	}
	createTopic(t, tc.addr(1), "quota", 0, 2)
	tc.waitTopic(t, "quota")
	hook := new(throttleHook)
	slow := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(1)), kgo.ClientID("slow"), kgo.DefaultProduceTopic("quota"), kgo.WithHooks(hook))
	ctx := testkit.Context(t, 20*time.Second)
	for i := 0; i < 20 && hook.maxMs.Load() == 0; i++ {
		if err := slow.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 16<<10)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if hook.maxMs.Load() == 0 {
		t.Fatal("a producer of broker 2 was never throttled by the 4 KiB/s quota set through broker 1")
	}

	// Broker 3 describes broker 2: its published static configs (the
	// unknown key without its value), and a dynamic one set through 1.
	if err := alterTopicConfig(t, tc.addr(1), "2", "log.retention.ms", "123456"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 3 to describe broker 2's dynamic log.retention.ms", func() bool {
		return deref(describeConfigs(t, tc.addr(3), "2")["log.retention.ms"].Value) == "123456"
	})
	b2 := describeConfigs(t, tc.addr(3), "2")
	if c := b2["node.id"]; deref(c.Value) != "2" || c.Source != 4 || !c.ReadOnly {
		t.Errorf("broker 2's node.id described by 3: %q source %d read-only %v; want 2, STATIC_BROKER_CONFIG, read-only", deref(c.Value), c.Source, c.ReadOnly)
	}
	if c := b2["broker.rack"]; deref(c.Value) != "r2" {
		t.Errorf("broker 2's broker.rack described by 3: %q", deref(c.Value))
	}
	if c, ok := b2["custom.unknown.key"]; !ok || c.Value != nil || !c.IsSensitive {
		t.Errorf("broker 2's unknown key described by 3: present %v, value %v, sensitive %v; want a sensitive null", ok, c.Value, c.IsSensitive)
	}
	if c := b2["log.retention.ms"]; c.Source != 2 {
		t.Errorf("broker 2's log.retention.ms source %d, want DYNAMIC_BROKER_CONFIG (2)", c.Source)
	}
	if c := describeConfigs(t, tc.addr(3), "3")["log.retention.ms"]; c.Value != nil {
		t.Errorf("broker 3's own log.retention.ms = %q; the override was for broker 2", deref(c.Value))
	}
}

func TestConcurrentConflictingAltersOnTwoBrokersLoseNothing(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopic(t, tc.addr(1), "race", 1)
	tc.waitTopic(t, "race")
	keys := []string{"retention.ms", "segment.ms", "delete.retention.ms", "file.delete.delay.ms",
		"flush.ms", "index.interval.bytes", "min.compaction.lag.ms", "message.timestamp.after.max.ms"}
	quotas := []string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
	var wg sync.WaitGroup
	errs := make(chan error, len(keys)+len(quotas))
	for i, k := range keys {
		wg.Go(func() { errs <- alterTopicConfig(t, tc.addr(int32(1+i%2)), "race", k, strconv.Itoa(1000001+i)) })
	}
	for i, k := range quotas {
		wg.Go(func() { errs <- alterClientQuota(t, tc.addr(int32(1+i%2)), "racer", k, float64(100+i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "broker 3 to see every alter", func() bool {
		got := describeConfigs(t, tc.addr(3), "race")
		for i, k := range keys {
			if deref(got[k].Value) != strconv.Itoa(1000001+i) {
				return false
			}
		}
		return true
	})
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.Match = "client-id", kmsg.StringPtr("racer")
	req.Components = append(req.Components, comp)
	resp := send[*kmsg.DescribeClientQuotasResponse](t, tc.addr(3), req)
	if len(resp.Entries) != 1 || len(resp.Entries[0].Values) != len(quotas) {
		t.Fatalf("quotas of client racer seen by broker 3: %+v; want all %d", resp.Entries, len(quotas))
	}
}

func TestStoppedBrokerLeavesTheCluster(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopic(t, tc.addr(1), "gone", 0, 1, 2, 3)
	var controller int32
	eventually(t, "a controller", func() bool { controller = metadata(t, tc.addr(1)).ControllerID; return controller > 0 })
	if err := tc.brokers[controller-1].Close(); err != nil {
		t.Fatal(err)
	}
	other := controller%3 + 1
	eventually(t, "the stopped broker gone from the others' metadata", func() bool {
		return len(metadata(t, tc.addr(other)).Brokers) == 2
	})
	eventually(t, "a new controller among the live brokers", func() bool {
		c := metadata(t, tc.addr(other)).ControllerID
		return c > 0 && c != controller
	})
	eventually(t, "the topic on the other broker", func() bool { return len(leaders(metadata(t, tc.addr(other), "gone"))) == 3 })
	for _, p := range metadata(t, tc.addr(other), "gone").Topics[0].Partitions {
		switch {
		case p.Partition == controller-1 && (p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code):
			t.Errorf("partition %d of the stopped broker: leader %d, %v; want -1, LEADER_NOT_AVAILABLE", p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
		case p.Partition != controller-1 && (p.Leader != p.Partition+1 || p.ErrorCode != 0):
			t.Errorf("partition %d: leader %d, %v", p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

func TestEtcdOutageKeepsDataFlowingAndFailsAdminWritesRetriably(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopic(t, tc.addr(1), "out", 0, 1, 2, 3)
	producer := testkit.Client(t, "", kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("out"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testkit.Context(t, 40*time.Second)
	produce := func(round int) {
		t.Helper()
		for p := int32(0); p < 3; p++ {
			if err := producer.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(round))}).FirstErr(); err != nil {
				t.Fatalf("round %d, partition %d: %v", round, p, err)
			}
		}
	}
	produce(1)

	tc.etcd.Stop()
	produce(2)
	consumer := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(2)), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"out": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	n := 0
	for n < 6 && ctx.Err() == nil {
		n += consumer.PollFetches(ctx).NumRecords()
	}
	if n != 6 {
		t.Fatalf("consumed %d of 6 records while etcd was down", n)
	}
	start := time.Now()
	r := tryCreateTopic(t, tc.addr(1), "during", 1, 1)
	if r.Topics[0].ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("CreateTopics while etcd is down: %v %s; want REQUEST_TIMED_OUT", kerr.ErrorForCode(r.Topics[0].ErrorCode), deref(r.Topics[0].ErrorMessage))
	}
	if err := alterTopicConfig(t, tc.addr(2), "out", "retention.ms", "1000"); err == nil || !kerr.IsRetriable(err) {
		t.Fatalf("alter while etcd is down: %v; want a retriable error", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("admin writes took %v to fail while etcd was down", d)
	}
	time.Sleep(2500 * time.Millisecond) // past the 2 s registration lease

	if err := tc.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "admin writes to work again", func() bool {
		return tryCreateTopic(t, tc.addr(1), "after", 1, 1).Topics[0].ErrorCode == 0
	})
	eventually(t, "every broker registered again", func() bool {
		for id := int32(1); id <= 3; id++ {
			if len(metadata(t, tc.addr(id)).Brokers) != 3 {
				return false
			}
		}
		return true
	})
	produce(3)
	for id := int32(1); id <= 3; id++ {
		eventually(t, fmt.Sprintf("admin writes through broker %d to work again", id), func() bool {
			err := alterTopicConfig(t, tc.addr(id), "out", "retention.ms", strconv.Itoa(1000+int(id)))
			if err != nil && !kerr.IsRetriable(err) {
				t.Fatal(err)
			}
			return err == nil
		})
	}
}
