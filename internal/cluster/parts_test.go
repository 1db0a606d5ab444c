package cluster_test

// Partition admin across brokers: DeleteRecords replicated to followers
// (the leader's low watermark), and KIP-966 eligible leader replicas as
// brokers of a partition die in turn.

import (
	"context"
	"errors"
	"fmt"
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
)

// describedPartition is partition 0 of topic as DescribeTopicPartitions on
// addr gives it.
func describedPartition(t *testing.T, addr, topic string) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 10
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	resp := send[*kmsg.DescribeTopicPartitionsResponse](t, addr, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("DescribeTopicPartitions %s on %s: %+v", topic, addr, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// logStartCheckpoint is the log start offset a replica persisted (-1:
// none yet).
func logStartCheckpoint(t *testing.T, logDir, topic string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(logDir, topic+"-0", "log-start-offset-checkpoint"))
	if err != nil {
		return -1
	}
	lines := strings.Fields(string(b))
	var off int64 = -1
	if len(lines) == 3 {
		fmt.Sscan(lines[2], &off)
	}
	return off
}

func deleteRecordsOn(t *testing.T, addr, topic string, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return send[*kmsg.DeleteRecordsResponse](t, addr, req).Topics[0].Partitions[0]
}

// DeleteRecords on a partition of three replicas answers once both
// followers have moved their log start offset too (the low watermark):
// each has it persisted, and a new leader after the old one stops starts
// its log there. A follower that was down while records were deleted
// learns the new start from its leader when it returns.
func TestDeleteRecordsIsReplicatedToEveryFollower(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopicWith(t, tc, "dr3", 1, 3, map[string]string{"internal.segment.bytes": "2000"})
	cl := newProducer(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dr3", Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0, 60)
	p := partitionsOf(t, tc.addr(1), "dr3")[0]
	leader := p.Leader
	if got := deleteRecordsOn(t, tc.addr(leader%3+1), "dr3", 30); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("DeleteRecords on a follower: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := deleteRecordsOn(t, tc.addr(leader), "dr3", 30); got.ErrorCode != 0 || got.LowWatermark != 30 {
		t.Fatalf("DeleteRecords to 30: %v, low watermark %d", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	// Answered: every replica has the new start on disk already.
	for id := int32(1); id <= 3; id++ {
		if got := logStartCheckpoint(t, tc.brokers[id-1].Config().LogDirs[0], "dr3"); got != 30 {
			t.Errorf("broker %d persisted log start %d when DeleteRecords answered, want 30", id, got)
		}
	}

	// A follower down while more records go.
	down := p.Replicas[1]
	if down == leader {
		down = p.Replicas[2]
	}
	downProps := tc.brokers[down-1].Config().Props
	if err := tc.brokers[down-1].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped follower out of the ISR", func() bool { return len(partitionsOf(t, tc.addr(leader), "dr3")[0].ISR) == 2 })
	produce(60, 120)
	if got := deleteRecordsOn(t, tc.addr(leader), "dr3", 110); got.ErrorCode != 0 || got.LowWatermark != 110 {
		t.Fatalf("DeleteRecords to 110 with a follower down: %v, low watermark %d", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	tc.brokers[down-1] = brokertest.StartWith(t, downProps)
	eventually(t, "the returning follower to learn the log start", func() bool {
		return logStartCheckpoint(t, tc.brokers[down-1].Config().LogDirs[0], "dr3") == 110
	})
	eventually(t, "the returning follower back in the ISR", func() bool { return len(partitionsOf(t, tc.addr(leader), "dr3")[0].ISR) == 3 })

	// The leader stops: its successor's log starts at 110 too.
	if err := tc.brokers[leader-1].Close(); err != nil {
		t.Fatal(err)
	}
	other := leader%3 + 1
	eventually(t, "a new leader", func() bool {
		np := partitionsOf(t, tc.addr(other), "dr3")[0]
		return np.Leader > 0 && np.Leader != leader
	})
	adm := kadm.NewClient(newProducer(t, tc))
	var start int64 = -1
	eventually(t, "ListOffsets earliest from the new leader", func() bool {
		starts, err := adm.ListStartOffsets(ctx, "dr3")
		if err != nil {
			return false
		}
		o, ok := starts.Lookup("dr3", 0)
		start = o.Offset
		return ok && o.Err == nil
	})
	if start != 110 {
		t.Errorf("the new leader's log starts at %d, want 110", start)
	}
}

// RF 3, min.insync.replicas 2, brokers of the partition die in turn (KIP-966
// with eligible.leader.replicas.version 1). The first follower leaves the
// ISR as Kafka always did. The second takes the ISR below min ISR: it goes
// to the ELR, acks=all is refused, and the high watermark stays, so an
// acks=1 record is not committed. The last one standing leaves an empty
// ISR, both in the ELR and itself as last known leader; a returning
// replica that is not in the ELR may not lead; an ELR member that returns
// leads, with every acknowledged record.
func TestEligibleLeaderReplicasKeepAcknowledgedRecordsAsBrokersDieInTurn(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	createTopicWith(t, tc, "elr", 1, 3, map[string]string{"min.insync.replicas": "2"})
	cl := newProducer(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "elr", Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	p := partitionsOf(t, tc.addr(1), "elr")[0]
	leader, first, second := p.Replicas[0], p.Replicas[1], p.Replicas[2]
	props := map[int32]map[string]string{}
	stop := func(id int32) {
		t.Helper()
		props[id] = tc.brokers[id-1].Config().Props
		if err := tc.brokers[id-1].Close(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 50)

	stop(first)
	eventually(t, "the first follower out of the ISR", func() bool { return len(describedPartition(t, tc.addr(leader), "elr").ISR) == 2 })
	if d := describedPartition(t, tc.addr(leader), "elr"); len(d.EligibleLeaderReplicas) != 0 || !slices.Equal(d.OfflineReplicas, []int32{first}) {
		t.Errorf("ISR at min ISR: ELR %v offline %v, want no ELR", d.EligibleLeaderReplicas, d.OfflineReplicas)
	}
	produce(50, 100)

	stop(second)
	var d kmsg.DescribeTopicPartitionsResponseTopicPartition
	// (The ISR shown drops brokers that are not live at once; the ELR
	// comes with the controller's change.)
	eventually(t, "the second follower in the ELR", func() bool {
		d = describedPartition(t, tc.addr(leader), "elr")
		return len(d.EligibleLeaderReplicas) > 0
	})
	if !slices.Equal(d.EligibleLeaderReplicas, []int32{second}) || !slices.Equal(d.ISR, []int32{leader}) || d.LeaderID != leader {
		t.Errorf("ISR below min ISR: leader %d ELR %v, want leader %d ELR [%d]", d.LeaderID, d.EligibleLeaderReplicas, leader, second)
	}
	strict, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(leader)), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	if err := strict.ProduceSync(ctx, &kgo.Record{Topic: "elr", Value: []byte("refused")}).FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all below min ISR: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	loose, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(leader)), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer loose.Close()
	if err := loose.ProduceSync(ctx, &kgo.Record{Topic: "elr", Value: []byte("unacknowledged")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 below min ISR: %v", err)
	}
	ends, err := kadm.NewClient(loose).ListEndOffsets(ctx, "elr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("elr", 0); o.Offset != 100 {
		t.Errorf("high watermark %d below min ISR after an acks=1 record, want it held at 100", o.Offset)
	}

	stop(leader)
	// A replica out of the ELR returns: it becomes the controller, which
	// empties the ISR, but it may not lead.
	tc.brokers[first-1] = brokertest.StartWith(t, props[first])
	want := []int32{leader, second}
	slices.Sort(want)
	eventually(t, "the last in-sync replica in the ELR", func() bool {
		d = describedPartition(t, tc.addr(first), "elr")
		return slices.Equal(d.EligibleLeaderReplicas, want)
	})
	if d.LeaderID != -1 || d.ErrorCode != kerr.LeaderNotAvailable.Code || len(d.ISR) != 0 || !slices.Equal(d.LastKnownELR, []int32{leader}) {
		t.Errorf("every in-sync replica gone: leader %d (%v) ELR %v last known %v, want -1, ELR %v, last known [%d]", d.LeaderID, kerr.ErrorForCode(d.ErrorCode), d.EligibleLeaderReplicas, d.LastKnownELR, want, leader)
	}
	time.Sleep(3 * time.Second) // more than an election pass
	if d = describedPartition(t, tc.addr(first), "elr"); d.LeaderID != -1 {
		t.Fatalf("broker %d, not eligible, was elected: %+v", first, d)
	}

	// An ELR member returns and leads, with every acknowledged record.
	tc.brokers[second-1] = brokertest.StartWith(t, props[second])
	eventually(t, "the ELR member elected", func() bool {
		d = describedPartition(t, tc.addr(first), "elr")
		return d.LeaderID == second
	})
	if d.LeaderEpoch <= p.LeaderEpoch || slices.Contains(d.EligibleLeaderReplicas, second) || !slices.Contains(d.ISR, second) || len(d.LastKnownELR) != 0 {
		t.Errorf("after the ELR election: %+v", d)
	}
	eventually(t, "the ISR back at min ISR, the ELR cleared", func() bool {
		d = describedPartition(t, tc.addr(second), "elr")
		return len(d.ISR) == 2 && len(d.EligibleLeaderReplicas) == 0
	})
	consumer, err := kgo.NewClient(kgo.SeedBrokers(tc.addr(second)), kgo.ConsumeTopics("elr"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
}

// The leader's own ISR shrink (a follower that cannot fetch, after
// replica.lag.time.max.ms) below min.insync.replicas puts the follower in
// the ELR, as Kafka's controller does with the leader's AlterPartition.
func TestLeaderShrinkBelowMinISRFillsTheELR(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"replica.lag.time.max.ms": "1000"}, map[int32]config.Properties{3: brokertest.Isolated()})
	createAssignedTopic(t, tc, "shrunk", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newProducer(t, tc, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shrunk", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var d kmsg.DescribeTopicPartitionsResponseTopicPartition
	eventually(t, "the silent follower out of the ISR", func() bool {
		d = describedPartition(t, tc.addr(1), "shrunk")
		return len(d.ISR) == 2
	})
	if !slices.Equal(d.ISR, []int32{1, 2}) || !slices.Equal(d.EligibleLeaderReplicas, []int32{3}) || d.LeaderID != 1 || len(d.LastKnownELR) != 0 {
		t.Errorf("after the leader's shrink below min ISR: %+v, want ISR [1 2] ELR [3]", d)
	}
}
