package cluster_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
		map[int32]config.Properties{3: {"inter.broker.listener.name": "NOWHERE"}})
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "marked", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if got := send[*kmsg.CreateTopicsResponse](t, tc.addr(1), req).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	tc.waitTopic(t, "marked")

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
