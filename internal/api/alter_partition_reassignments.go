package api

// AlterPartitionReassignments (key 45), v0–v1 (KIP-455; v1 KIP-860).
//
// Starts, replaces or (replicas null) cancels the reassignment of each
// partition named; the controller package rewrites the partition record
// and completes the reassignment once the target replicas are in sync.
// Per partition: INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS,
// UNKNOWN_TOPIC_OR_PARTITION, and with allow_replication_factor_change
// false (v1) INVALID_REPLICATION_FACTOR. Needs ALTER on the cluster:
// without it the answer and every partition get
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.AlterPartitionAssignments, 0, 1, handleAlterPartitionReassignments, catchesUp(), clusterACL(auth.OpAlter))
}

func handleAlterPartitionReassignments(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRFChange := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange
	allowed := s.clusterAllowed(c, kmsg.AlterPartitionAssignments)
	if !allowed {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuth)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			err := errClusterAuth
			if allowed {
				err = s.controller.Reassign(ctx, rt.Topic, rp.Partition, rp.Replicas, allowRFChange)
			}
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode, sp.ErrorMessage = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
