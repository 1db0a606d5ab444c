package api

// WriteTxnMarkers (key 27), v0–v1.
//
// Broker to broker: a transaction coordinator asks the leaders of a
// transaction's partitions to write its commit or abort marker
// (replica.Partitions.WriteTxnMarker through Server.WriteTxnMarker, which
// the broker's wiring routes to the group coordinator for
// `__consumer_offsets`); `kafka-transactions.sh abort` sends it too, for a
// hanging transaction. Authorized as a whole, as Kafka does: CLUSTER ALTER,
// else CLUSTER_ACTION, else every partition gets
// CLUSTER_AUTHORIZATION_FAILED. Errors are per partition: an unknown topic
// or partition, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH for a
// producer epoch below the partition's, TRANSACTION_COORDINATOR_FENCED for
// a coordinator epoch below the last marker's. v2 (KIP-1228's transaction
// version per marker) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.WriteTxnMarkers, 0, 1, handleWriteTxnMarkers, clusterACL(auth.OpClusterAction))
}

func handleWriteTxnMarkers(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.allowed(c, auth.OpAlter, auth.ResourceCluster, auth.ClusterName) || s.clusterAllowed(c, kmsg.WriteTxnMarkers)
	for _, m := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = m.ProducerID
		marker := replica.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
		for _, mt := range m.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = mt.Topic
			for _, p := range mt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = p
				if !allowed {
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else {
					sp.ErrorCode, _ = errorCode(s.WriteTxnMarker(ctx, mt.Topic, p, marker))
				}
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	return resp, nil
}
