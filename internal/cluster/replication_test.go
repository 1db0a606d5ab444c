package cluster_test

// Replication across the cluster's brokers: placement of replicated
// topics, and the partition state every broker reports.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
	"kbroker/test/tcprelay"
)

// partitionsOf is a topic's partitions from one broker's metadata.
func partitionsOf(t *testing.T, addr, topic string) []kmsg.MetadataResponseTopicPartition {
	t.Helper()
	resp := metadata(t, addr, topic)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("metadata of %s from %s: %v", topic, addr, err)
	}
	return resp.Topics[0].Partitions
}

// A topic of replication factor 3 on three brokers: every partition has
// three distinct replicas, all in sync, the first leading at epoch 0, and
// leaders spread over every broker; every broker says the same. Manual
// assignments of another factor are kept; inconsistent ones, and more
// replicas than brokers, are refused with Kafka's errors; new partitions
// get the topic's factor. A stopped broker shows as an offline replica,
// leaves the ISR, and its partitions get new leaders at a new epoch.
func TestReplicatedTopicPlacementAndMetadata(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	if r := tryCreateTopic(t, tc.addr(1), "rf3", 6, 3); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating rf3: %v %s", kerr.ErrorForCode(r.Topics[0].ErrorCode), deref(r.Topics[0].ErrorMessage))
	}
	tc.waitTopic(t, "rf3")
	var first []kmsg.MetadataResponseTopicPartition
	for id := int32(1); id <= 3; id++ {
		parts := partitionsOf(t, tc.addr(id), "rf3")
		led := map[int32]int{}
		for _, p := range parts {
			distinct := slices.Clone(p.Replicas)
			slices.Sort(distinct)
			if len(slices.Compact(distinct)) != 3 || !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 || len(p.OfflineReplicas) != 0 {
				t.Errorf("broker %d, partition %d: replicas %v isr %v leader %d epoch %d offline %v", id, p.Partition, p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.OfflineReplicas)
			}
			led[p.Leader]++
		}
		if len(led) != 3 {
			t.Errorf("broker %d: leaders %v, want all three brokers leading", id, led)
		}
		if first == nil {
			first = parts
		} else if !slices.EqualFunc(first, parts, func(a, b kmsg.MetadataResponseTopicPartition) bool { return slices.Equal(a.Replicas, b.Replicas) }) {
			t.Errorf("broker %d reports other replicas than broker 1", id)
		}
	}

	r := tryCreateTopic(t, tc.addr(2), "rf4", 1, 4)
	if r.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code || !strings.Contains(deref(r.Topics[0].ErrorMessage), "The target replication factor of 4 cannot be reached because only 3 broker(s) are registered.") {
		t.Errorf("RF 4: %v %q", kerr.ErrorForCode(r.Topics[0].ErrorCode), deref(r.Topics[0].ErrorMessage))
	}

	createManual := func(name string, assignment ...[]int32) *kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for p, replicas := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
		return &send[*kmsg.CreateTopicsResponse](t, tc.addr(1), req).Topics[0]
	}
	if got := createManual("uneven", []int32{1, 2}, []int32{3}); got.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("uneven assignment: %v %q, want INVALID_REPLICA_ASSIGNMENT", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	if got := createManual("manual", []int32{3, 1}, []int32{2, 3}); got.ErrorCode != 0 {
		t.Fatalf("manual assignment: %v %q", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	tc.waitTopic(t, "manual")
	if parts := partitionsOf(t, tc.addr(2), "manual"); !slices.Equal(parts[0].Replicas, []int32{3, 1}) || !slices.Equal(parts[1].Replicas, []int32{2, 3}) || parts[0].Leader != 3 {
		t.Errorf("manual topic: %+v", parts)
	}

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 10000
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = "rf3", 9
	cp.Topics = append(cp.Topics, ct)
	if got := send[*kmsg.CreatePartitionsResponse](t, tc.addr(3), cp).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("CreatePartitions: %v %q", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	for _, p := range partitionsOf(t, tc.addr(3), "rf3") {
		if len(p.Replicas) != 3 {
			t.Errorf("partition %d after the increase has replicas %v", p.Partition, p.Replicas)
		}
	}

	if err := tc.brokers[2].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 3 out of broker 1's metadata", func() bool { return len(metadata(t, tc.addr(1)).Brokers) == 2 })
	eventually(t, "broker 3's partitions led by others", func() bool {
		for _, p := range partitionsOf(t, tc.addr(1), "rf3") {
			if p.Leader == 3 || p.Leader < 0 || len(p.ISR) != 2 {
				return false
			}
		}
		return true
	})
	for _, p := range partitionsOf(t, tc.addr(1), "rf3") {
		wantEpoch := int32(0)
		if p.Replicas[0] == 3 {
			wantEpoch = 1 // a new leader was elected
		}
		if !slices.Equal(p.OfflineReplicas, []int32{3}) || slices.Contains(p.ISR, 3) || p.LeaderEpoch != wantEpoch || !slices.Contains(p.ISR, p.Leader) {
			t.Errorf("partition %d with broker 3 stopped: leader %d epoch %d isr %v offline %v", p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.OfflineReplicas)
		}
	}
}

// batchSums lists the (base offset, CRC) of every record batch in the
// segment files of one replica of topic-partition, in log order: two
// replicas with the same list hold the same bytes.
func batchSums(t *testing.T, logDir, topic string, partition int32) [][2]int64 {
	t.Helper()
	dir := filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, partition))
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(segs)
	var out [][2]int64
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for len(b) >= 21 {
			size := int(binary.BigEndian.Uint32(b[8:12]))
			if size <= 0 || 12+size > len(b) {
				break // preallocated or being written
			}
			out = append(out, [2]int64{int64(binary.BigEndian.Uint64(b[:8])), int64(binary.BigEndian.Uint32(b[17:21]))})
			b = b[12+size:]
		}
	}
	return out
}

func newProducer(t *testing.T, tc *testCluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Records produced with acks=all to a topic of three replicas are copied
// by both followers: every replica's log holds the same batches, checksum
// for checksum, and every acknowledged record is below each leader's high
// watermark and consumed back; the leader answers OffsetForLeaderEpoch.
func TestAcksAllRecordsReachEveryReplicaIdentically(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	if r := tryCreateTopic(t, tc.addr(1), "copies", 3, 3); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	tc.waitTopic(t, "copies")
	cl := newProducer(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 120
	for i := range n {
		r := &kgo.Record{Topic: "copies", Partition: int32(i % 3), Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	for p := int32(0); p < 3; p++ {
		var sums [3][][2]int64
		eventually(t, fmt.Sprintf("partition %d identical on all replicas", p), func() bool {
			for id := range 3 {
				sums[id] = batchSums(t, tc.brokers[id].Config().LogDirs[0], "copies", p)
			}
			return len(sums[0]) == n/3 && slices.Equal(sums[0], sums[1]) && slices.Equal(sums[0], sums[2])
		})
	}
	// OffsetForLeaderEpoch from a client (KIP-320): the leader says where
	// epoch 0 ends (its log end, epoch 0 being the latest); a newer
	// current epoch than the leader's is UNKNOWN_LEADER_EPOCH; a broker
	// that does not lead the partition refuses.
	p0 := partitionsOf(t, tc.addr(1), "copies")[0]
	epochReq := func(addr string, current int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "copies"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return send[*kmsg.OffsetForLeaderEpochResponse](t, addr, req).Topics[0].Partitions[0]
	}
	if got := epochReq(tc.addr(p0.Leader), 0); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != n/3 {
		t.Errorf("OffsetForLeaderEpoch on the leader: %v epoch %d end %d, want epoch 0 end %d", kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset, n/3)
	}
	if got := epochReq(tc.addr(p0.Leader), 5); got.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("OffsetForLeaderEpoch with a newer current epoch: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := epochReq(tc.addr(p0.Leader%3+1), 0); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("OffsetForLeaderEpoch on a follower: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("copies"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got < n && ctx.Err() == nil {
		got += consumer.PollFetches(ctx).NumRecords()
	}
	if got != n {
		t.Errorf("consumed %d of %d acknowledged records", got, n)
	}
}

// createTopicWith creates a topic of partitions at rf with config
// overrides, through broker addr.
func createTopicWith(t *testing.T, tc *testCluster, name string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	createTopicRequest(t, tc, topicToCreate(name, partitions, rf, configs))
}

// createAssignedTopic creates name with one partition on replicas (the
// first leads) and configs, and waits until the cluster knows it.
func createAssignedTopic(t *testing.T, tc *testCluster, name string, replicas []int32, configs map[string]string) {
	t.Helper()
	rt := topicToCreate(name, -1, -1, configs)
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	createTopicRequest(t, tc, rt)
}

func topicToCreate(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

// createTopicRequest sends CreateTopics of rt to broker 1, fails the test
// on an error, and waits until the cluster knows the topic.
func createTopicRequest(t *testing.T, tc *testCluster, rt kmsg.CreateTopicsRequestTopic) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, rt)
	if got := send[*kmsg.CreateTopicsResponse](t, tc.addr(1), req).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating %s: %v %s", rt.Topic, kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	tc.waitTopic(t, rt.Topic)
}

// The leader of a partition of three replicas stops (Close: no controlled
// shutdown). The controller takes it out of the ISR and elects another
// in-sync replica with a new leader epoch; every acknowledged record is
// still there and producing goes on; a topic whose min.insync.replicas is
// now above its ISR refuses acks=all with NOT_ENOUGH_REPLICAS. The old
// leader restarts on its logs, follows the new leader, catches up and
// rejoins the ISR, with a log identical to the leader's.
func TestLeaderLossElectsFromISRAndTheOldLeaderRejoins(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopicWith(t, tc, "failover", 1, 3, map[string]string{"min.insync.replicas": "2"})
	createTopicWith(t, tc, "strict", 1, 3, map[string]string{"min.insync.replicas": "3"})
	cl := newProducer(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "failover", Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0, 50)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("all three")}).FirstErr(); err != nil {
		t.Fatalf("strict topic with three in sync: %v", err)
	}

	old := partitionsOf(t, tc.addr(1), "failover")[0]
	props := tc.brokers[old.Leader-1].Config().Props
	if err := tc.brokers[old.Leader-1].Close(); err != nil {
		t.Fatal(err)
	}
	other := old.Leader%3 + 1
	var now kmsg.MetadataResponseTopicPartition
	eventually(t, "a new leader from the ISR", func() bool {
		now = partitionsOf(t, tc.addr(other), "failover")[0]
		return now.Leader > 0 && now.Leader != old.Leader && len(now.ISR) == 2
	})
	if now.LeaderEpoch != old.LeaderEpoch+1 || slices.Contains(now.ISR, old.Leader) || !slices.Contains(old.ISR, now.Leader) {
		t.Errorf("after the leader %d stopped: leader %d epoch %d isr %v (was epoch %d isr %v)", old.Leader, now.Leader, now.LeaderEpoch, now.ISR, old.LeaderEpoch, old.ISR)
	}
	produce(50, 100)

	strict, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(other)), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	eventually(t, "the strict topic's ISR to shrink", func() bool { return len(partitionsOf(t, tc.addr(other), "strict")[0].ISR) == 2 })
	if err := strict.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("two of three")}).FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all with 2 in sync of min.insync.replicas 3: %v, want NOT_ENOUGH_REPLICAS", err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(other)), kgo.ConsumeTopics("failover"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < 100 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for i := range 100 {
		if !seen[fmt.Sprint("v", i)] {
			t.Errorf("acknowledged record v%d is missing", i)
		}
	}

	restarted := brokertest.StartWith(t, props)
	tc.brokers[old.Leader-1] = restarted
	eventually(t, "the old leader back in the ISR", func() bool {
		return len(partitionsOf(t, tc.addr(other), "failover")[0].ISR) == 3
	})
	eventually(t, "the old leader's log identical to the new leader's", func() bool {
		a := batchSums(t, tc.brokers[now.Leader-1].Config().LogDirs[0], "failover", 0)
		b := batchSums(t, restarted.Config().LogDirs[0], "failover", 0)
		return len(a) == 100 && slices.Equal(a, b)
	})
}

// A follower that is live but cannot fetch (broker 3's inter-broker
// listener is one no other broker has: brokertest.Isolated) holds the high watermark, and with it acks=all,
// only until replica.lag.time.max.ms passes: the leader then takes it out
// of the ISR, the waiting produce is acknowledged by the two replicas
// left, and the follower stays a replica, out of sync.
func TestLaggingFollowerLeavesTheISR(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"replica.lag.time.max.ms": "1000"}, map[int32]config.Properties{3: brokertest.Isolated()})
	createAssignedTopic(t, tc, "laggy", []int32{1, 2, 3}, nil)
	cl := newProducer(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "laggy", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("acks=all answered after %v, before the silent follower could have left the ISR", waited)
	}
	p := partitionsOf(t, tc.addr(1), "laggy")[0] // the leader, whose ISR change has been applied
	if !slices.Equal(p.ISR, []int32{1, 2}) || !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.Leader != 1 || p.LeaderEpoch != 0 {
		t.Errorf("after the shrink: leader %d epoch %d replicas %v isr %v", p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
	}
	start = time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "laggy", Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("acks=all with the follower out of the ISR took %v", waited)
	}
}

// A replica whose log has records no other replica has (it led alone, its
// follower unable to fetch) loses leadership to an unclean election; the
// new leader writes other records at the same offsets. When the old leader
// comes back it asks the new one where its epoch ends
// (OffsetForLeaderEpoch), truncates its own records and copies the new
// leader's: both logs end identical.
func TestReturningLeaderTruncatesWhatTheNewLeaderNeverHad(t *testing.T) {
	tc := startCluster(t, 2, config.Properties{"replica.lag.time.max.ms": "1000"}, map[int32]config.Properties{2: brokertest.Isolated()})
	createAssignedTopic(t, tc, "diverge", []int32{1, 2}, map[string]string{"unclean.leader.election.enable": "true"})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cl := newProducer(t, tc)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "diverge", Value: []byte(fmt.Sprint("old", i))}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if isr := partitionsOf(t, tc.addr(1), "diverge")[0].ISR; !slices.Equal(isr, []int32{1}) {
		t.Fatalf("ISR %v, want the leader alone", isr)
	}
	props := tc.brokers[0].Config().Props
	if err := tc.brokers[0].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 2 elected uncleanly", func() bool {
		p := partitionsOf(t, tc.addr(2), "diverge")[0]
		return p.Leader == 2 && p.LeaderEpoch == 1
	})
	cl2 := newProducer(t, &testCluster{brokers: tc.brokers[1:]})
	for i := range 5 {
		if err := cl2.ProduceSync(ctx, &kgo.Record{Topic: "diverge", Value: []byte(fmt.Sprint("new", i))}).FirstErr(); err != nil {
			t.Fatalf("record %d on the new leader: %v", i, err)
		}
	}
	restarted := brokertest.StartWith(t, props)
	tc.brokers[0] = restarted
	var a1, a2 [][2]int64
	eventually(t, "the returning leader's log identical to the new leader's", func() bool {
		a1 = batchSums(t, restarted.Config().LogDirs[0], "diverge", 0)
		a2 = batchSums(t, tc.brokers[1].Config().LogDirs[0], "diverge", 0)
		return len(a2) == 5 && slices.Equal(a1, a2)
	})
	eventually(t, "the returning leader back in the ISR", func() bool {
		return len(partitionsOf(t, tc.addr(2), "diverge")[0].ISR) == 2
	})
}

// restartOnItsPort stops broker id and starts it again on its logs and on
// the port it had, as a restarted host's broker comes back, so that the
// other brokers reach the new process at the address they already hold
// (brokertest's brokers otherwise take a new port at every start);
// overrides replace some of its settings.
func (tc *testCluster) restartOnItsPort(t *testing.T, id int32, overrides config.Properties) {
	t.Helper()
	old := tc.brokers[id-1]
	props := maps.Clone(old.Config().Props)
	props["listeners"] = "PLAINTEXT://" + old.Addr()
	maps.Copy(props, overrides)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	tc.brokers[id-1] = brokertest.StartWith(t, props)
}

// caughtUp reports whether the leader's log of topic-partition 0 holds
// want batches and each follower's the same ones.
func (tc *testCluster) caughtUp(t *testing.T, topic string, leader int32, want int, followers ...int32) bool {
	t.Helper()
	lead := batchSums(t, tc.brokers[leader-1].Config().LogDirs[0], topic, 0)
	if len(lead) != want {
		return false
	}
	for _, id := range followers {
		if !slices.Equal(batchSums(t, tc.brokers[id-1].Config().LogDirs[0], topic, 0), lead) {
			return false
		}
	}
	return true
}

// producerTo produces numbered records to one topic, with acks=1: only the
// leader's append is waited for, so what a test times is the followers'
// copy.
type producerTo struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	n     int // records produced so far, one batch each
}

func newProducerTo(t *testing.T, tc *testCluster, topic string) *producerTo {
	cl := newProducer(t, tc, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MetadataMinAge(100*time.Millisecond))
	return &producerTo{t: t, cl: cl, topic: topic}
}

func (p *producerTo) produce(n int) {
	p.t.Helper()
	for range n {
		if err := p.cl.ProduceSync(testkit.Context(p.t, 30*time.Second), &kgo.Record{Topic: p.topic, Value: []byte(fmt.Sprint("v", p.n))}).FirstErr(); err != nil {
			p.t.Fatalf("record %d to %s: %v", p.n, p.topic, err)
		}
		p.n++
	}
}

// A leader restarted on its own port (a rolling restart: controlled
// shutdown, then start) leaves its followers a pooled connection to the
// old process; when it is elected again, their first request to it fails
// at once (EOF) and must be sent again at once, not after
// replica.fetch.backoff.ms. With a 10 s backoff, both followers copy what
// the re-elected leader appends within 3 s of the election.
func TestFollowerOfARestartedLeaderFetchesWithoutBackingOff(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"replica.fetch.backoff.ms": "10000", "replica.fetch.wait.max.ms": "100", "auto.leader.rebalance.enable": "false"}, nil)
	createAssignedTopic(t, tc, "reelected", []int32{2, 1, 3}, nil)
	p := newProducerTo(t, tc, "reelected")
	p.produce(3)
	eventually(t, "both followers fetching from broker 2", func() bool { return tc.caughtUp(t, "reelected", 2, p.n, 1, 3) })

	// Broker 2 hands its leadership to broker 1 before it stops, so the
	// followers stop fetching from it while their connections to it are
	// still open; it then stops (those connections die unnoticed in the
	// followers' pools) and comes back on the same port.
	leaderSeenBy := func(id, leader int32) bool { return partitionsOf(t, tc.addr(id), "reelected")[0].Leader == leader }
	if err := tc.brokers[1].ControlledShutdown(testkit.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "brokers 1 and 3 following broker 1", func() bool { return leaderSeenBy(1, 1) && leaderSeenBy(3, 1) })
	// A fetch still long-polling at broker 2 (replica.fetch.wait.max.ms)
	// is answered before broker 2 closes: its connection stays pooled.
	time.Sleep(300 * time.Millisecond)
	tc.restartOnItsPort(t, 2, nil)
	p.produce(2)
	eventually(t, "broker 2 back in the ISR", func() bool { return len(partitionsOf(t, tc.addr(1), "reelected")[0].ISR) == 3 })
	// A follower joins the ISR once it has what is committed, which may be
	// short of the leader's log end: electing it at once would lose the
	// acks=1 records above the high watermark, as in Kafka, and the
	// followers would never copy them from it.
	eventually(t, "broker 2 holding every record", func() bool { return tc.caughtUp(t, "reelected", 1, p.n, 2, 3) })

	ctx := testkit.Context(t, 30*time.Second)
	res, err := kadm.NewClient(newProducer(t, tc)).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"reelected": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil {
				t.Fatalf("preferred election: %v", r.Err)
			}
		}
	}
	elected := time.Now()
	eventually(t, "broker 2 leading again", func() bool { return leaderSeenBy(2, 2) })
	p.produce(2)
	eventually(t, "both followers copying the re-elected leader", func() bool { return tc.caughtUp(t, "reelected", 2, p.n, 1, 3) })
	if took := time.Since(elected); took > 3*time.Second {
		t.Errorf("the followers caught up %v after broker 2 was elected again, want under 3 s (replica.fetch.backoff.ms is 10 s)", took)
	}
}

// A follower that learns of an election before the new leader has applied
// it is refused — UNKNOWN_TOPIC_ID by a leader that does not know the new
// topic yet, NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH by one that has
// not taken the leadership yet — and asks again within moments, not after
// replica.fetch.backoff.ms (10 s here). Broker 2 reads etcd through a
// relay, held while the controller makes it the leader: of a new topic,
// then of a topic whose leader stopped. Each time, the follower copies what
// broker 2 appends within 3 s of the relay's release.
func TestFollowerAsksAgainSoonALeaderThatHasNotAppliedItsElection(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"replica.fetch.backoff.ms": "10000", "auto.leader.rebalance.enable": "false"}, nil)
	etcdLink := tcprelay.New(t)
	etcdLink.Point(strings.TrimPrefix(tc.etcd.Endpoint(), "http://"))
	tc.restartOnItsPort(t, 2, config.Properties{"metadata.etcd.endpoints": "http://" + etcdLink.Addr()})
	createAssignedTopic(t, tc, "failover", []int32{3, 2, 1}, nil)
	failover := newProducerTo(t, tc, "failover")
	failover.produce(2)
	eventually(t, "broker 3's followers copying it", func() bool { return tc.caughtUp(t, "failover", 3, failover.n, 1, 2) })

	// The held relay stalls broker 2's etcd watch (and its lease's
	// keepalives: the hold stays well under metadata.etcd.session.timeout.ms).
	leaderSeenBy := func(id int32, topic string, leader int32) bool {
		resp := metadata(t, tc.addr(id), topic)
		return resp.Topics[0].ErrorCode == 0 && resp.Topics[0].Partitions[0].Leader == leader
	}
	heldUntilRefused := func(what string, cond func() bool) time.Time {
		t.Helper()
		eventually(t, what, cond)
		// The follower's fetcher asks at once and is refused; long enough
		// for that and a re-ask or two, short of the backoff.
		time.Sleep(300 * time.Millisecond)
		etcdLink.Release()
		return time.Now()
	}
	within := func(what string, released time.Time) {
		t.Helper()
		if took := time.Since(released); took > 3*time.Second {
			t.Errorf("%s: the follower caught up %v after broker 2 learnt of its election, want under 3 s (replica.fetch.backoff.ms is 10 s)", what, took)
		}
	}

	// Each time the follower follows nothing else from broker 2, so its
	// fetcher for broker 2 has the refused partition alone: first broker 3,
	// in a new topic (its empty log needs no epoch check: the fetch is
	// refused), then broker 1, in a topic whose leader stopped (its epoch
	// check is refused).
	etcdLink.Hold()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, topicToCreate("created", -1, -1, nil))
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{2, 3}
	req.Topics[0].ReplicaAssignment = append(req.Topics[0].ReplicaAssignment, a)
	if got := send[*kmsg.CreateTopicsResponse](t, tc.addr(1), req).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating: %v %s", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	released := heldUntilRefused("broker 3 following broker 2 in the new topic", func() bool { return leaderSeenBy(3, "created", 2) })
	created := newProducerTo(t, tc, "created")
	created.produce(2)
	eventually(t, "broker 3 copying the new topic", func() bool { return tc.caughtUp(t, "created", 2, created.n, 3) })
	within("a new topic", released)

	etcdLink.Hold()
	if err := tc.brokers[2].Close(); err != nil {
		t.Fatal(err)
	}
	released = heldUntilRefused("broker 1 following broker 2 after broker 3 stopped", func() bool { return leaderSeenBy(1, "failover", 2) })
	failover.produce(2)
	eventually(t, "broker 1 copying broker 2", func() bool { return tc.caughtUp(t, "failover", 2, failover.n, 1) })
	within("a leader's failover", released)
}
