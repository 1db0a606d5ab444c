package controller_test

// Controlled shutdown, requested elections and reassignment on brokers
// sharing a real etcd, talked to by franz-go clients.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

type testCluster struct {
	etcd    *etcdtest.Etcd
	brokers []*broker.Broker
	props   []config.Properties
}

// startCluster starts n brokers on one embedded etcd; perNode adds props
// to one broker.
func startCluster(t *testing.T, n int, extra config.Properties, perNode map[int32]config.Properties) *testCluster {
	t.Helper()
	tc := &testCluster{etcd: etcdtest.Start(t)}
	for id := int32(1); id <= int32(n); id++ {
		props := config.Properties{
			"listeners":                        "PLAINTEXT://127.0.0.1:0",
			"log.dirs":                         t.TempDir(),
			"node.id":                          strconv.Itoa(int(id)),
			"metadata.etcd.endpoints":          tc.etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"metadata.etcd.request.timeout.ms": "1000",
			"log.retention.check.interval.ms":  "600000",
			"auto.leader.rebalance.enable":     "false",
		}
		for k, v := range extra {
			props[k] = v
		}
		for k, v := range perNode[id] {
			props[k] = v
		}
		tc.props = append(tc.props, props)
		tc.brokers = append(tc.brokers, brokertest.StartWith(t, props))
	}
	return tc
}

func (tc *testCluster) broker(id int32) *broker.Broker { return tc.brokers[id-1] }

func (tc *testCluster) addrs() []string {
	var out []string
	for _, b := range tc.brokers {
		out = append(out, b.Addr())
	}
	return out
}

// admin is an admin client of broker id alone.
func (tc *testCluster) admin(t *testing.T, id int32) *admin.Client {
	t.Helper()
	cl, err := admin.New(kgo.SeedBrokers(tc.broker(id).Addr()), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with one partition per replica list.
func (tc *testCluster) createTopic(t *testing.T, name string, configs map[string]string, assignment ...[]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := send[*kmsg.CreateTopicsResponse](t, tc.broker(1).Addr(), req)
	if got := resp.Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(got.ErrorCode))
	}
	for i := range tc.brokers {
		if tc.brokers[i] == nil {
			continue
		}
		eventually(t, "every broker to see "+name, func() bool {
			return metadata(t, tc.brokers[i].Addr(), name).Topics[0].ErrorCode == 0
		})
	}
}

func send[R kmsg.Response](t *testing.T, addr string, req kmsg.Request) R {
	t.Helper()
	cl := testkit.Client(t, "", kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(testkit.Context(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("%s to %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return resp.(R)
}

func metadata(t *testing.T, addr string, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return send[*kmsg.MetadataResponse](t, addr, req)
}

func partitionsOf(t *testing.T, addr, topic string) []kmsg.MetadataResponseTopicPartition {
	t.Helper()
	resp := metadata(t, addr, topic)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("metadata of %s from %s: %v", topic, addr, err)
	}
	parts := resp.Topics[0].Partitions
	slices.SortFunc(parts, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	return parts
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testkit.WaitFor(20*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// batchSums lists (base offset, CRC) of every batch in one replica's
// segment files: two replicas with equal lists hold the same records.
func batchSums(t *testing.T, logDir, topic string, partition int32) [][2]int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
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
				break
			}
			out = append(out, [2]int64{int64(binary.BigEndian.Uint64(b[:8])), int64(binary.BigEndian.Uint32(b[17:21]))})
			b = b[12+size:]
		}
	}
	return out
}

// producer produces acks=all records to topic's partitions from a
// goroutine until stop, and counts the acknowledged ones and the errors.
type producer struct {
	acked, failed atomic.Int64
	slowest       atomic.Int64 // nanoseconds of the slowest acknowledged produce
	lastErr       atomic.Value
	stop          context.CancelFunc
	done          sync.WaitGroup
}

func startProducing(t *testing.T, seeds []string, topic string, partitions int32) *producer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr := &producer{stop: cancel}
	pr.done.Add(1)
	go func() {
		defer pr.done.Done()
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
			start := time.Now()
			err := cl.ProduceSync(context.Background(), r).FirstErr()
			if took := int64(time.Since(start)); took > pr.slowest.Load() {
				pr.slowest.Store(took)
			}
			if err != nil {
				pr.failed.Add(1)
				pr.lastErr.Store(err.Error())
				continue
			}
			pr.acked.Add(1)
		}
	}()
	return pr
}

func (pr *producer) finish() { pr.stop(); pr.done.Wait() }

// SIGTERM's path on a broker of three: ControlledShutdown moves every
// partition it leads to another in-sync replica and takes it out of every
// ISR before it stops, while an acks=all producer keeps producing without
// an error; after Close the records are all there. Without the handover
// (Close alone) the same partitions would be leaderless until the lease
// expired.
func TestControlledShutdownMovesLeadershipBeforeTheBrokerStops(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	tc.createTopic(t, "rolling", map[string]string{"min.insync.replicas": "2"}, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}, []int32{1, 3, 2})
	pr := startProducing(t, tc.addrs(), "rolling", 4)
	eventually(t, "records acknowledged", func() bool { return pr.acked.Load() > 50 })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := tc.broker(1).ControlledShutdown(ctx); err != nil {
		t.Fatalf("controlled shutdown: %v", err)
	}
	took := time.Since(start)
	// Broker 1 still runs: the handover happened before it stopped.
	for _, p := range partitionsOf(t, tc.broker(2).Addr(), "rolling") {
		if p.Leader == 1 || p.Leader < 0 || slices.Contains(p.ISR, 1) {
			t.Errorf("partition %d after the controlled shutdown: leader %d isr %v", p.Partition, p.Leader, p.ISR)
		}
	}
	if took > 5*time.Second {
		t.Errorf("the handover took %v", took)
	}
	before := pr.acked.Load()
	eventually(t, "records acknowledged after the handover", func() bool { return pr.acked.Load() > before+50 })
	if err := tc.broker(1).Close(); err != nil {
		t.Fatal(err)
	}
	before = pr.acked.Load()
	eventually(t, "records acknowledged with broker 1 stopped", func() bool { return pr.acked.Load() > before+50 })
	pr.finish()
	// The handover itself takes tens of milliseconds; the slowest produce
	// is a kgo client that refreshed its metadata halfway through it and
	// waits its MetadataMinAge (5 s) before the next refresh.
	t.Logf("%d records acknowledged, the slowest in %v", pr.acked.Load(), time.Duration(pr.slowest.Load()))
	if n := pr.failed.Load(); n > 0 {
		t.Errorf("%d produces failed across the controlled shutdown, the last: %v", n, pr.lastErr.Load())
	}

	// Everything acknowledged is there, read from the remaining brokers.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.broker(2).Addr()), kgo.ConsumeTopics("rolling"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	got := int64(0)
	for got < pr.acked.Load() && cctx.Err() == nil {
		got += int64(consumer.PollFetches(cctx).NumRecords())
	}
	if got < pr.acked.Load() {
		t.Errorf("consumed %d of %d acknowledged records", got, pr.acked.Load())
	}
}

// A broker leaving with controlled shutdown and coming back leaves its
// preferred partitions led by others; ElectLeaders PREFERRED gives them
// back to their first replica, then says ELECTION_NOT_NEEDED. An UNCLEAN
// election of a partition with a leader is not needed either; asking for
// a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, and the
// preferred replica out of the ISR PREFERRED_LEADER_NOT_AVAILABLE.
func TestPreferredElectionRestoresTheFirstReplica(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	tc.createTopic(t, "pref", nil, []int32{1, 2, 3}, []int32{2, 3, 1})
	ctx := testkit.Context(t, 60*time.Second)
	if err := tc.broker(1).ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	adm := tc.admin(t, 2)
	res, err := adm.ElectLeaders(ctx, false, []admin.PartitionReplicas{{Topic: "pref", Partition: 0}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Errorf("preferred election with broker 1 shutting down: %v %+v, want PREFERRED_LEADER_NOT_AVAILABLE", err, res)
	}
	tc.broker(1).Close()
	tc.brokers[0] = brokertest.StartWith(t, tc.props[0])
	eventually(t, "broker 1 back in the ISR", func() bool {
		p := partitionsOf(t, tc.broker(2).Addr(), "pref")[0]
		return len(p.ISR) == 3 && p.Leader != 1
	})
	res, err = adm.ElectLeaders(ctx, false, nil)
	if err != nil || len(res) != 1 || res[0].Topic != "pref" || res[0].Partition != 0 || res[0].Err != nil {
		t.Fatalf("preferred election of every partition: %v %+v, want only pref-0 elected", err, res)
	}
	p := partitionsOf(t, tc.broker(2).Addr(), "pref")
	if p[0].Leader != 1 || p[1].Leader != 2 {
		t.Errorf("after the preferred election: leaders %d and %d, want 1 and 2", p[0].Leader, p[1].Leader)
	}
	res, err = adm.ElectLeaders(ctx, false, []admin.PartitionReplicas{{Topic: "pref", Partition: 0}, {Topic: "pref", Partition: 7}, {Topic: "nope", Partition: 0}})
	if err != nil || len(res) != 3 {
		t.Fatalf("elections: %v %+v", err, res)
	}
	if !errors.Is(res[0].Err, kerr.UnknownTopicOrPartition) || !errors.Is(res[1].Err, kerr.ElectionNotNeeded) || !errors.Is(res[2].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("nope-0, pref-0, pref-7: %v / %v / %v", res[0].Err, res[1].Err, res[2].Err)
	}
	res, err = adm.ElectLeaders(ctx, true, []admin.PartitionReplicas{{Topic: "pref", Partition: 1}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ElectionNotNeeded) {
		t.Errorf("unclean election of a led partition: %v %+v, want ELECTION_NOT_NEEDED", err, res)
	}
}

// With auto.leader.rebalance.enable the controller itself gives a
// partition back to its preferred replica once that replica is in sync
// again, within leader.imbalance.check.interval.seconds.
func TestAutoLeaderRebalanceRestoresThePreferredLeader(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"}, nil)
	tc.createTopic(t, "auto", nil, []int32{1, 2, 3})
	if err := tc.broker(1).ControlledShutdown(testkit.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	tc.broker(1).Close()
	eventually(t, "another leader", func() bool { return partitionsOf(t, tc.broker(2).Addr(), "auto")[0].Leader > 1 })
	tc.brokers[0] = brokertest.StartWith(t, tc.props[0])
	eventually(t, "broker 1 leading again", func() bool {
		p := partitionsOf(t, tc.broker(2).Addr(), "auto")[0]
		return p.Leader == 1 && len(p.ISR) == 3
	})
}

// A reassignment of 1,2,3 to 2,3,4 on four brokers: broker 4 copies the
// partition from its leader, joins the ISR, and the controller completes
// it (replicas 2,3,4, broker 1 out, the leader moved off it); broker 4's
// log is the leader's, batch for batch; records produced meanwhile are
// all there. Kafka's refusals: an unknown broker or a repeated one is
// INVALID_REPLICA_ASSIGNMENT, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION.
func TestReassignmentMovesTheDataAndCompletes(t *testing.T) {
	tc := startCluster(t, 4, nil, nil)
	tc.createTopic(t, "moving", map[string]string{"min.insync.replicas": "2"}, []int32{1, 2, 3})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testkit.Context(t, 60*time.Second)
	for i := range 200 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "moving", Value: []byte(fmt.Sprint("before-", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := tc.admin(t, 3)
	res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{
		{Topic: "moving", Partition: 0, Replicas: []int32{2, 3, 4}},
		{Topic: "moving", Partition: 0 + 5, Replicas: []int32{1, 2, 3}},
		{Topic: "gone", Partition: 0, Replicas: []int32{1, 2, 3}},
	})
	if err != nil || len(res) != 3 || res[0].Err != nil {
		t.Fatalf("reassigning: %v %+v", err, res)
	}
	if !errors.Is(res[1].Err, kerr.UnknownTopicOrPartition) || !errors.Is(res[2].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown partition, unknown topic: %v / %v", res[1].Err, res[2].Err)
	}
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "moving", Value: []byte(fmt.Sprint("during-", i))}).FirstErr(); err != nil {
			t.Fatalf("producing during the reassignment: %v", err)
		}
	}
	eventually(t, "the reassignment to complete", func() bool {
		p := partitionsOf(t, tc.broker(2).Addr(), "moving")[0]
		return slices.Equal(p.Replicas, []int32{2, 3, 4}) && len(p.ISR) == 3 && !slices.Contains(p.ISR, 1) && p.Leader != 1
	})
	if left, err := adm.ListPartitionReassignments(ctx, nil); err != nil || len(left) != 0 {
		t.Errorf("reassignments left after completion: %v %+v", err, left)
	}
	leader := partitionsOf(t, tc.broker(2).Addr(), "moving")[0].Leader
	eventually(t, "broker 4's log identical to the leader's", func() bool {
		a := batchSums(t, tc.broker(leader).Config().LogDirs[0], "moving", 0)
		b := batchSums(t, tc.broker(4).Config().LogDirs[0], "moving", 0)
		return len(a) == 300 && slices.Equal(a, b)
	})

	res, err = adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{
		{Topic: "moving", Partition: 0, Replicas: []int32{2, 3, 9}},
		{Topic: "moving", Partition: 0, Replicas: []int32{2, 2, 3}},
		{Topic: "moving", Partition: 0, Replicas: []int32{}},
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("bad assignments: %v %+v", err, res)
	}
	for i, r := range res {
		if !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
			t.Errorf("bad assignment %d: %v, want INVALID_REPLICA_ASSIGNMENT", i, r.Err)
		}
	}
}

// A reassignment whose new replica cannot catch up (broker 3 reaches no
// leader: its inter-broker listener is one no other broker has) stays in progress and
// is listed with its adding and removing replicas; cancelling it (null
// replicas) restores the replicas it started from, and a second cancel is
// NO_REASSIGNMENT_IN_PROGRESS.
func TestReassignmentInProgressIsListedAndCancelled(t *testing.T) {
	tc := startCluster(t, 3, nil, map[int32]config.Properties{3: brokertest.Isolated()})
	tc.createTopic(t, "stuck", nil, []int32{1, 2})
	ctx := testkit.Context(t, 60*time.Second)
	adm := tc.admin(t, 1)
	if res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "stuck", Partition: 0, Replicas: []int32{1, 3}}}); err != nil || res[0].Err != nil {
		t.Fatalf("reassigning: %v %+v", err, res)
	}
	time.Sleep(time.Second) // time enough to complete, were broker 3 able to fetch
	list, err := adm.ListPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "stuck", Partition: 0}, {Topic: "nope", Partition: 0}})
	want := admin.Reassignment{Topic: "stuck", Partition: 0, Replicas: []int32{1, 3, 2}, Adding: []int32{3}, Removing: []int32{2}}
	if err != nil || len(list) != 1 || !slices.Equal(list[0].Replicas, want.Replicas) || !slices.Equal(list[0].Adding, want.Adding) || !slices.Equal(list[0].Removing, want.Removing) {
		t.Fatalf("listing: %v %+v, want %+v", err, list, want)
	}
	if p := partitionsOf(t, tc.broker(2).Addr(), "stuck")[0]; !slices.Equal(p.Replicas, []int32{1, 3, 2}) || slices.Contains(p.ISR, 3) {
		t.Errorf("metadata during the reassignment: replicas %v isr %v", p.Replicas, p.ISR)
	}
	// The replica being removed keeps its log until the reassignment
	// completes; the one being added has one.
	eventually(t, "broker 3's log", func() bool { return tc.partitionDirExists(t, 3, "stuck", 0) })
	if !tc.partitionDirExists(t, 2, "stuck", 0) {
		t.Error("the removing replica's log went before the reassignment completed")
	}
	if res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "stuck", Partition: 0, Replicas: nil}}); err != nil || res[0].Err != nil {
		t.Fatalf("cancelling: %v %+v", err, res)
	}
	eventually(t, "the replicas it started from", func() bool {
		p := partitionsOf(t, tc.broker(2).Addr(), "stuck")[0]
		return slices.Equal(p.Replicas, []int32{1, 2}) && slices.Equal(p.ISR, []int32{1, 2})
	})
	if list, err := adm.ListPartitionReassignments(ctx, nil); err != nil || len(list) != 0 {
		t.Errorf("listing after the cancel: %v %+v", err, list)
	}
	eventually(t, "the cancelled replica's log deleted", func() bool { return !tc.partitionDirExists(t, 3, "stuck", 0) })
	if !tc.partitionDirExists(t, 1, "stuck", 0) || !tc.partitionDirExists(t, 2, "stuck", 0) {
		t.Error("a log still assigned was deleted")
	}
	if res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "stuck", Partition: 0, Replicas: nil}}); err != nil || !errors.Is(res[0].Err, kerr.NoReassignmentInProgress) {
		t.Errorf("second cancel: %v %+v, want NO_REASSIGNMENT_IN_PROGRESS", err, res)
	}
	// v1 with allow_replication_factor_change false (KIP-860): a target of
	// another size is INVALID_REPLICATION_FACTOR, one of the same size runs.
	alterV1 := func(replicas ...int32) int16 {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.AllowReplicationFactorChange = 1, false
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "stuck"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := send[*kmsg.AlterPartitionAssignmentsResponse](t, tc.broker(1).Addr(), req)
		if resp.AllowReplicationFactorChange {
			t.Errorf("v1 answer says allow_replication_factor_change")
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := alterV1(1, 2, 3); code != kerr.InvalidReplicationFactor.Code {
		t.Errorf("v1 RF change: %v, want INVALID_REPLICATION_FACTOR", kerr.ErrorForCode(code))
	}
	if code := alterV1(2, 1); code != 0 {
		t.Errorf("v1 reorder: %v", kerr.ErrorForCode(code))
	}
}

// partitionDirExists reports whether broker id has a log directory for
// topic-partition (not one renamed for deletion).
func (tc *testCluster) partitionDirExists(t *testing.T, id int32, topic string, partition int32) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(tc.broker(id).Config().LogDirs[0], fmt.Sprintf("%s-%d", topic, partition)))
	return err == nil
}

// A reassignment that only adds a replica (1,2 → 1,2,3) keeps the leader
// and its leader epoch, as Kafka's controller does: the leader starts
// counting the new follower within its epoch, takes it into the ISR once
// it caught up, and the controller completes the reassignment; clients
// holding the epoch are never fenced. Broker 3's copy is the leader's.
func TestReassignmentAddingAReplicaKeepsTheLeaderEpoch(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	tc.createTopic(t, "growing", nil, []int32{1, 2})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testkit.Context(t, 60*time.Second)
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "growing", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	before := partitionsOf(t, tc.broker(2).Addr(), "growing")[0]
	adm := tc.admin(t, 2)
	if res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "growing", Partition: 0, Replicas: []int32{1, 2, 3}}}); err != nil || res[0].Err != nil {
		t.Fatalf("reassigning: %v %+v", err, res)
	}
	eventually(t, "the reassignment to complete", func() bool {
		p := partitionsOf(t, tc.broker(2).Addr(), "growing")[0]
		if p.LeaderEpoch != before.LeaderEpoch {
			t.Fatalf("leader epoch %d during the reassignment, was %d", p.LeaderEpoch, before.LeaderEpoch)
		}
		if !slices.Equal(p.Replicas, []int32{1, 2, 3}) || len(p.ISR) != 3 {
			return false
		}
		left, err := adm.ListPartitionReassignments(ctx, nil)
		return err == nil && len(left) == 0
	})
	if p := partitionsOf(t, tc.broker(3).Addr(), "growing")[0]; p.Leader != 1 || p.LeaderEpoch != before.LeaderEpoch {
		t.Errorf("after the reassignment: leader %d epoch %d, want %d and %d", p.Leader, p.LeaderEpoch, before.Leader, before.LeaderEpoch)
	}
	eventually(t, "broker 3's log identical to the leader's", func() bool {
		a := batchSums(t, tc.broker(1).Config().LogDirs[0], "growing", 0)
		return len(a) == 100 && slices.Equal(a, batchSums(t, tc.broker(3).Config().LogDirs[0], "growing", 0))
	})
}

// Partitions reassigned down to one replica commit their appends again:
// 1,2 → 2 (the follower, which copied the log, now leads alone) and 1,2 →
// 1 (the leader loses its only follower). Records produced afterwards are
// consumed, which they would not be were the high watermark still waiting
// for a follower. The replicas taken out delete their logs; the others
// keep theirs.
func TestReassignmentToOneReplicaCommitsAndDeletesTheRemovedLogs(t *testing.T) {
	tc := startCluster(t, 2, nil, nil)
	tc.createTopic(t, "shrinking", nil, []int32{1, 2}, []int32{1, 2})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testkit.Context(t, 60*time.Second)
	produce := func(what string) {
		for i := range 20 {
			for p := range int32(2) {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shrinking", Partition: p, Value: []byte(fmt.Sprint(what, i))}).FirstErr(); err != nil {
					t.Fatalf("producing %s to partition %d: %v", what, p, err)
				}
			}
		}
	}
	produce("before-")
	res, err := tc.admin(t, 1).AlterPartitionReassignments(ctx, []admin.PartitionReplicas{
		{Topic: "shrinking", Partition: 0, Replicas: []int32{2}},
		{Topic: "shrinking", Partition: 1, Replicas: []int32{1}},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("reassigning: %v %+v", err, res)
	}
	eventually(t, "both partitions on one replica", func() bool {
		p := partitionsOf(t, tc.broker(1).Addr(), "shrinking")
		return slices.Equal(p[0].Replicas, []int32{2}) && p[0].Leader == 2 && slices.Equal(p[1].Replicas, []int32{1}) && p[1].Leader == 1
	})
	produce("after-")
	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("shrinking"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	perPartition := map[int32]int{}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for perPartition[0]+perPartition[1] < 80 && cctx.Err() == nil {
		consumer.PollFetches(cctx).EachRecord(func(r *kgo.Record) { perPartition[r.Partition]++ })
	}
	if perPartition[0] != 40 || perPartition[1] != 40 {
		t.Errorf("consumed %d and %d records of partitions 0 and 1, want 40 each", perPartition[0], perPartition[1])
	}
	eventually(t, "the removed replicas' logs deleted", func() bool {
		return !tc.partitionDirExists(t, 1, "shrinking", 0) && !tc.partitionDirExists(t, 2, "shrinking", 1)
	})
	if !tc.partitionDirExists(t, 2, "shrinking", 0) || !tc.partitionDirExists(t, 1, "shrinking", 1) {
		t.Error("a log still assigned was deleted")
	}
}

// A broker down while a reassignment took it out of a partition never sees
// the change: when it starts again it deletes the log it still has, since
// the controller no longer assigns the partition to it.
func TestBrokerRestartedAfterBeingReassignedAwayDeletesTheStrayLog(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	tc.createTopic(t, "left", nil, []int32{1, 2, 3})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 60*time.Second)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "left", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	eventually(t, "broker 3's copy", func() bool { return len(batchSums(t, tc.broker(3).Config().LogDirs[0], "left", 0)) == 10 })
	if err := tc.broker(3).Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 3 out of the ISR", func() bool { return !slices.Contains(partitionsOf(t, tc.broker(1).Addr(), "left")[0].ISR, 3) })
	if res, err := tc.admin(t, 1).AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "left", Partition: 0, Replicas: []int32{1, 2}}}); err != nil || res[0].Err != nil {
		t.Fatalf("reassigning: %v %+v", err, res)
	}
	eventually(t, "the reassignment to complete", func() bool {
		return slices.Equal(partitionsOf(t, tc.broker(1).Addr(), "left")[0].Replicas, []int32{1, 2})
	})
	if !tc.partitionDirExists(t, 3, "left", 0) {
		t.Fatal("broker 3's log went while it was down")
	}
	tc.brokers[2] = brokertest.StartWith(t, tc.props[2])
	eventually(t, "broker 3's stray log deleted", func() bool { return !tc.partitionDirExists(t, 3, "left", 0) })
}
