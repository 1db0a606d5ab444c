package api

// ListPartitionReassignments (key 46), v0.
//
// The partitions being reassigned, of the topics and partitions named or
// (topics null) of every topic, each with its replicas and the adding and
// removing ones; topics and partitions that do not exist or are not being
// reassigned are left out, as Kafka's controller leaves them. Needs
// DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/controller"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.ListPartitionReassignments, 0, 0, handleListPartitionReassignments, catchesUp(), clusterACL(auth.OpDescribe))
}

func handleListPartitionReassignments(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.clusterAllowed(c, kmsg.ListPartitionReassignments) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuth)
		return resp, nil
	}
	var topics map[string][]int32
	if req.Topics != nil {
		topics = make(map[string][]int32, len(req.Topics))
		for _, rt := range req.Topics {
			// An empty list names no partition (a nil one in the map
			// would mean all of them).
			topics[rt.Topic] = append(topics[rt.Topic], append([]int32{}, rt.Partitions...)...)
		}
	}
	var cur *kmsg.ListPartitionReassignmentsResponseTopic
	for _, ra := range controller.Reassignments(s.Store.Snapshot(), topics) {
		if cur == nil || cur.Topic != ra.Topic {
			resp.Topics = append(resp.Topics, kmsg.NewListPartitionReassignmentsResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = ra.Topic
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas = ra.Partition, ra.Replicas
		p.AddingReplicas, p.RemovingReplicas = nonNil(ra.Adding), nonNil(ra.Removing)
		cur.Partitions = append(cur.Partitions, p)
	}
	return resp, nil
}

// nonNil is ids, or an empty list: the arrays are not nullable.
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
