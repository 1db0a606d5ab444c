package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// highWatermark is the partition's high watermark as its leader at addr
// reports it (ListOffsets latest, read_uncommitted).
func highWatermark(t *testing.T, addr, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	got := send[*kmsg.ListOffsetsResponse](t, addr, req).Topics[0].Partitions[0]
	if got.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s-%d: %v", topic, partition, kerr.ErrorForCode(got.ErrorCode))
	}
	return got.Offset
}

// A transaction marker on a data partition is acknowledged only once the
// in-sync replicas hold it (Kafka appends WriteTxnMarkers with acks=-1):
// the coordinator writes CompleteCommit after the acknowledgement, so a
// marker only its leader had would be lost with that leader, the
// transaction left open on the new one. With a silent follower in the
// ISR, the marker's answer waits until the follower leaves it and the high
// watermark passes the marker.
func TestTxnMarkerIsAcknowledgedOnceTheInSyncReplicasHoldIt(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"replica.lag.time.max.ms": "3000"},
		map[int32]config.Properties{3: brokertest.Isolated()})
	createAssignedTopic(t, tc, "marked", []int32{1, 2, 3}, nil)

	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 1000, 0, false, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "marked", []int32{0}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	start := time.Now()
	resp := send[*kmsg.WriteTxnMarkersResponse](t, tc.addr(1), wm)
	took := time.Since(start)
	if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("WriteTxnMarkers: %v", kerr.ErrorForCode(code))
	}
	// The marker is offset 0: acknowledged, the high watermark is past it.
	if hw := highWatermark(t, tc.addr(1), "marked", 0); hw < 1 {
		t.Errorf("the marker was acknowledged after %v with the high watermark at %d, below it", took, hw)
	}
	if took < 1500*time.Millisecond {
		t.Errorf("the marker was acknowledged after %v, before the silent follower could have left the ISR", took)
	}
}

// A transaction whose offsets go to a `__consumer_offsets` partition led
// by another broker than its transaction coordinator completes: the
// coordinator sends that partition's marker to its leader (WriteTxnMarkers)
// instead of handing it to its own group coordinator, which has no shard
// for the partition; the transaction then stayed in PrepareCommit for ever
// and its offsets unstable (franz-go's TestTxnEtl hung on three brokers).
func TestTxnOffsetsOnAnotherBrokersOffsetsPartitionAreCommitted(t *testing.T) {
	tc := startCluster(t, 3, config.Properties{"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopicWith(t, tc, "sourced", 1, 3, nil)
	const txnID = "etl-txn"
	txnCoord := waitCoordinator(t, tc.addr(1), 1, txnID, 0)
	groupID := ""
	for i := 0; groupID == ""; i++ {
		if g := "etl-g" + strconv.Itoa(i); waitCoordinator(t, tc.addr(1), 0, g, 0) != txnCoord {
			groupID = g
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sourced", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, groupID
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = txnID, groupID, pid, epoch, -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "sourced"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 7
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if resp, err := commit.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %v %+v", err, resp)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group, fetch.RequireStable = groupID, true
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "sourced", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	var last string
	for ctx.Err() == nil {
		resp, err := fetch.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 {
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == 0 && p.Offset == 7 {
				return
			}
			last = fmt.Sprintf("offset %d, %v", p.Offset, kerr.ErrorForCode(p.ErrorCode))
		} else {
			last = fmt.Sprint(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the committed transaction's offset (group coordinator %s, transaction coordinator %d) never became stable: %s", groupID, txnCoord, last)
}
