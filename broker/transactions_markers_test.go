package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/internal/group"
	"kbroker/internal/testkit"
)

// A WriteTxnMarkers for a `__consumer_offsets` partition another broker
// leads is answered NOT_LEADER_OR_FOLLOWER, as Kafka translates its group
// coordinator's NOT_COORDINATOR: that is the error on which a transaction
// coordinator, and kadm's WriteTxnMarkers, look the leader up again and
// retry. The leader itself takes the marker.
func TestWriteTxnMarkersForAnOffsetsPartitionLedElsewhereIsNotLeaderOrFollower(t *testing.T) {
	brokers := twoTxnBrokers(t, nil)
	rc0 := testkit.Dial(t, brokers[0].Addr())
	wantCode(t, "FindCoordinator of a group", retrying(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 0, []string{"g"}
		return request[*kmsg.FindCoordinatorResponse](t, rc0, req).Coordinators[0].ErrorCode
	}), nil)
	adm := kadm.NewClient(testkit.Client(t, brokers[0].Addr()))
	md, err := adm.Metadata(testkit.Context(t, 10*time.Second), group.Topic)
	if err != nil {
		t.Fatal(err)
	}
	pm := md.Topics[group.Topic].Partitions[0]
	leader, other := brokers[0], brokers[1]
	if pm.Leader == 2 {
		leader, other = brokers[1], brokers[0]
	}
	marker := func(b *broker.Broker) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 0, false, 0
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = group.Topic, []int32{pm.Partition}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return request[*kmsg.WriteTxnMarkersResponse](t, testkit.Dial(t, b.Addr()), req).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "WriteTxnMarkers to the broker not leading the offsets partition", marker(other), kerr.NotLeaderForPartition)
	deadline := time.Now().Add(10 * time.Second)
	code := marker(leader)
	for code == kerr.NotLeaderForPartition.Code && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the leader's group shard still loading
		code = marker(leader)
	}
	wantCode(t, "WriteTxnMarkers to the offsets partition's leader", code, nil)
}
