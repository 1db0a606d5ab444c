package cluster_test

// The group and transaction coordinators on replicated internal topics:
// they follow their partitions' leadership through elections, and what
// they acknowledged survives the loss of the broker that acknowledged it.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/group"
	"kbroker/internal/testkit"
	"kbroker/internal/txn"
)

// findCoordinator asks exactly the broker at addr for the coordinator of
// key (keyType 0: a group, 1: a transactional id): its node id, or -1 with
// the error.
func findCoordinator(t *testing.T, addr string, keyType int8, key string) (int32, error) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorType, req.CoordinatorKeys = keyType, []string{key}
	resp, err := trySend(t, addr, req)
	if err != nil {
		return -1, err
	}
	c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
	if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
		return -1, err
	}
	return c.NodeID, nil
}

// waitCoordinator waits until the broker at addr names a coordinator of
// key other than broker not (0: any), creating the internal topic on the
// way, and returns it.
func waitCoordinator(t *testing.T, addr string, keyType int8, key string, not int32) int32 {
	t.Helper()
	var id int32
	eventually(t, fmt.Sprintf("a coordinator of %q other than broker %d", key, not), func() bool {
		var err error
		id, err = findCoordinator(t, addr, keyType, key)
		return err == nil && id > 0 && id != not
	})
	return id
}

// survivors are the brokers of a 3-broker cluster other than down.
func survivors(down int32) []int32 {
	var out []int32
	for id := int32(1); id <= 3; id++ {
		if id != down {
			out = append(out, id)
		}
	}
	return out
}

// internalReplicas checks that every partition of an internal topic, as
// the broker at addr reports it, has want replicas, all in sync.
func internalReplicas(t *testing.T, addr, topic string, want int) {
	t.Helper()
	eventually(t, topic+" fully replicated", func() bool {
		for _, p := range partitionsOf(t, addr, topic) {
			if len(p.Replicas) != want || len(p.ISR) != want {
				return false
			}
		}
		return true
	})
}

// The coordinator of a group whose offsets are on a `__consumer_offsets`
// of three replicas stops (Close: no controlled shutdown). FindCoordinator
// on the brokers left names the partition's new leader; the offsets the
// group committed (acknowledged only once every in-sync replica had them)
// are all there, the group's consumer goes on from them, commits through
// the new coordinator and reaches the end. The old coordinator, back as a
// follower, answers the group NOT_COORDINATOR.
func TestGroupCoordinatorFailsOverWithItsCommittedOffsets(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{
		"offsets.topic.num.partitions":     "3",
		"group.initial.rebalance.delay.ms": "0",
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	createTopicWith(t, tc, "events", 3, 3, nil)
	cl := newProducer(t, tc)
	const perPartition = 100
	for i := range 3 * perPartition {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	const groupID = "failover-group"
	coord := waitCoordinator(t, tc.addr(1), 0, groupID, 0)
	internalReplicas(t, tc.addr(1), group.Topic, 3)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxPartitionBytes(512))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	poll := func(until func() bool) {
		t.Helper()
		for !until() {
			if ctx.Err() != nil {
				t.Fatalf("consumed %d distinct records before the deadline", len(seen))
			}
			fs := consumer.PollRecords(ctx, 50)
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
			if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("commit: %v (retried with the next poll)", err)
			}
		}
	}
	poll(func() bool { return len(seen) >= perPartition })

	adm := kadm.NewClient(testkit.Client(t, "", kgo.SeedBrokers(tc.addrs()...)))
	before, err := adm.FetchOffsets(ctx, groupID)
	if err != nil || before.Error() != nil {
		t.Fatalf("offsets before the failover: %v %v", err, before.Error())
	}
	if len(before.Offsets()["events"]) == 0 {
		t.Fatalf("no offsets committed before the failover: %v", before.Offsets())
	}

	props := tc.brokers[coord-1].Config().Props
	if err := tc.brokers[coord-1].Close(); err != nil {
		t.Fatal(err)
	}
	left := survivors(coord)
	survivor := left[0]
	next := waitCoordinator(t, tc.addr(left[0]), 0, groupID, coord)
	if other := waitCoordinator(t, tc.addr(left[1]), 0, groupID, coord); other != next {
		t.Errorf("the brokers left disagree on the coordinator: %d and %d", next, other)
	}

	after, err := kadm.NewClient(testkit.Client(t, tc.addr(survivor))).FetchOffsets(ctx, groupID)
	if err != nil || after.Error() != nil {
		t.Fatalf("offsets from the new coordinator %d: %v %v", next, err, after.Error())
	}
	before.Each(func(o kadm.OffsetResponse) {
		got, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || got.At < o.At {
			t.Errorf("%s-%d: committed %d before the failover, the new coordinator has %v (found %v)", o.Topic, o.Partition, o.At, got.At, ok)
		}
	})

	poll(func() bool {
		offs, err := kadm.NewClient(testkit.Client(t, tc.addr(survivor))).FetchOffsets(ctx, groupID)
		if err != nil || offs.Error() != nil {
			return false
		}
		for p := int32(0); p < 3; p++ {
			if o, ok := offs.Lookup("events", p); !ok || o.At != perPartition {
				return false
			}
		}
		return true
	})
	for i := range 3 * perPartition {
		if !seen[fmt.Sprint("v", i)] {
			t.Errorf("record v%d never consumed", i)
		}
	}

	restarted := brokertest.StartWith(t, props)
	tc.brokers[coord-1] = restarted
	internalReplicas(t, tc.addr(survivor), group.Topic, 3)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = groupID, -1, ""
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "events"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if got := send[*kmsg.OffsetCommitResponse](t, restarted.Addr(), commit).Topics[0].Partitions[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Errorf("OffsetCommit to the old coordinator, now a follower: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
}

// A transactional producer's coordinator (the leader of its
// `__transaction_state` partition, three replicas, min.insync.replicas 2)
// stops between a transaction's produce and its EndTxn. FindCoordinator
// names another broker; the transaction commits or aborts there, whole; a
// new producer of the same transactional id initializes against the new
// coordinator (fencing the old one) and commits a transaction; a
// read_committed consumer sees the committed transactions whole and
// nothing of an aborted one.
func TestTransactionCoordinatorFailsOver(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"transaction.state.log.num.partitions": "3"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	createTopicWith(t, tc, "payments", 3, 3, nil)
	const txnID = "failover-txn"
	coord := waitCoordinator(t, tc.addr(1), 1, txnID, 0)
	internalReplicas(t, tc.addr(1), txn.Topic, 3)
	txnConfigs := describeConfigs(t, tc.addr(1), txn.Topic)
	if got := txnConfigs["min.insync.replicas"]; deref(got.Value) != "2" {
		t.Errorf("%s min.insync.replicas = %q, want transaction.state.log.min.isr (2)", txn.Topic, deref(got.Value))
	}
	if got := txnConfigs["unclean.leader.election.enable"]; deref(got.Value) != "false" || got.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("%s unclean.leader.election.enable = %q (source %d), want a topic override false", txn.Topic, deref(got.Value), got.Source)
	}

	newTxnProducer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionTimeout(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// produceTxn produces one record per partition of payments, values
	// prefixed by name, in a transaction left open.
	produceTxn := func(cl *kgo.Client, name string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("%s: begin: %v", name, err)
		}
		for p := int32(0); p < 3; p++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Partition: p, Value: []byte(name + "-" + strconv.Itoa(int(p)))}).FirstErr(); err != nil {
				t.Fatalf("%s: produce to partition %d: %v", name, p, err)
			}
		}
	}
	first := newTxnProducer()
	produceTxn(first, "t1")
	if err := first.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("t1: commit: %v", err)
	}
	produceTxn(first, "t2")

	if err := tc.brokers[coord-1].Close(); err != nil {
		t.Fatal(err)
	}
	survivor := survivors(coord)[0]
	next := waitCoordinator(t, tc.addr(survivor), 1, txnID, coord)
	t2Committed := first.EndTransaction(ctx, kgo.TryCommit) == nil
	if !t2Committed {
		// The commit's answer was lost with the coordinator; whatever
		// the new one decided, the transaction must be whole.
		_ = first.EndTransaction(ctx, kgo.TryAbort)
	}
	t.Logf("coordinator %d stopped, %d took over; t2 committed: %v", coord, next, t2Committed)

	second := newTxnProducer()
	produceTxn(second, "t3")
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("t3 on the new coordinator %d: %v", next, err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(survivor)), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for !seen["t3-0"] || !seen["t3-1"] || !seen["t3-2"] {
		if ctx.Err() != nil {
			t.Fatalf("read_committed saw %v before the deadline", seen)
		}
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	var t2 []bool
	for p := range 3 {
		if !seen["t1-"+strconv.Itoa(p)] {
			t.Errorf("t1-%d of the committed first transaction is missing", p)
		}
		t2 = append(t2, seen["t2-"+strconv.Itoa(p)])
	}
	if slices.Contains(t2, true) && slices.Contains(t2, false) {
		t.Errorf("the transaction cut by the failover is torn: partitions seen %v", t2)
	}
	if t2Committed && !t2[0] {
		t.Errorf("t2 was acknowledged as committed but is not visible")
	}
}

// In a cluster smaller than the internal topics' replication factors (3),
// the topics get one replica per live broker, and __transaction_state's
// min.insync.replicas is lowered to match, so the coordinators work.
func TestInternalTopicsAreClampedToTheLiveBrokers(t *testing.T) {
	tc := startCluster(t, 1, config.Properties{"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2"}, nil)
	waitCoordinator(t, tc.addr(1), 0, "g", 0)
	waitCoordinator(t, tc.addr(1), 1, "x", 0)
	internalReplicas(t, tc.addr(1), group.Topic, 1)
	internalReplicas(t, tc.addr(1), txn.Topic, 1)
	if got := describeConfigs(t, tc.addr(1), txn.Topic)["min.insync.replicas"]; deref(got.Value) != "1" {
		t.Errorf("%s min.insync.replicas on one broker = %q, want 1", txn.Topic, deref(got.Value))
	}
	cl := testkit.Client(t, tc.addr(1), kgo.TransactionalID("x"))
	createTopicWith(t, tc, "one", 1, 1, nil)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(testkit.Context(t, 20*time.Second), &kgo.Record{Topic: "one", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(testkit.Context(t, 20*time.Second), kgo.TryCommit); err != nil {
		t.Fatalf("a transaction on a one-broker cluster: %v", err)
	}
}

// An offset commit is acknowledged only once the in-sync replicas of its
// `__consumer_offsets` partition hold it (acks=-1): while a follower that
// cannot fetch (broker 3's inter-broker listener is one no other broker
// has: brokertest.Isolated) is
// still in the ISR, a commit waits offsets.commit.timeout.ms and gets
// COORDINATOR_NOT_AVAILABLE, as Kafka maps a timed-out append; once
// replica.lag.time.max.ms has taken the follower out of the ISR, commits
// succeed.
func TestOffsetCommitWaitsForTheInSyncReplicas(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{
		"offsets.topic.num.partitions": "3",
		"offsets.commit.timeout.ms":    "1000",
		"replica.lag.time.max.ms":      "6000",
	}, map[int32]config.Properties{3: brokertest.Isolated()})
	createTopicWith(t, tc, "tracked", 1, 1, nil)
	// A group whose coordinator has broker 3 as a follower, not as leader.
	groupID, coord := "", int32(0)
	for i := 0; groupID == ""; i++ {
		g := "g" + strconv.Itoa(i)
		if id := waitCoordinator(t, tc.addr(1), 0, g, 0); id != 3 {
			groupID, coord = g, id
		}
	}
	commit := func() (int16, time.Duration) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = groupID, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "tracked"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp := send[*kmsg.OffsetCommitResponse](t, tc.addr(coord), req)
		return resp.Topics[0].Partitions[0].ErrorCode, time.Since(start)
	}
	if code, took := commit(); code != kerr.CoordinatorNotAvailable.Code || took < 900*time.Millisecond {
		t.Errorf("commit with a silent follower in the ISR: %v after %v, want COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms", kerr.ErrorForCode(code), took)
	}
	eventually(t, "a commit once the silent follower left the ISR", func() bool {
		code, _ := commit()
		return code == 0
	})
	p := partitionsOf(t, tc.addr(coord), group.Topic)[group.Partition(groupID, 3)]
	if slices.Contains(p.ISR, 3) || len(p.ISR) != 2 {
		t.Errorf("the offsets partition's ISR after the commit: %v", p.ISR)
	}
}
