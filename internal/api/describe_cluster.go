package api

// DescribeCluster (key 60), v0–v2.
//
// The cluster id, the controller and the brokers, as in Metadata. Asking
// for controller endpoints (v1 endpoint type 2) on a broker listener gets
// MISMATCHED_ENDPOINT_TYPE, as Kafka answers. No broker is ever fenced
// here. Needs no permission, as in Kafka: admin clients ask it for the
// brokers and the controller. The KIP-430 cluster authorized operations,
// when asked for, go only to a principal that may DESCRIBE the cluster (0
// to any other).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() {
	register(kmsg.DescribeCluster, 0, 2, handleDescribeCluster, catchesUp())
}

func handleDescribeCluster(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.EndpointType = req.EndpointType
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.clusterAuthorizedOperations(c)
	}
	resp.ClusterID = s.ClusterID
	resp.ControllerID = s.controllerID()
	for _, b := range brokerList(s.liveBrokerSet(s.Store.Snapshot()), c.Listener) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp, nil
}
