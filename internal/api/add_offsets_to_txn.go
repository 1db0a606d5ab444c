package api

// AddOffsetsToTxn (key 25), v0–v4.
//
// Adds a group's `__consumer_offsets` partition to the producer's
// transaction, so that its TxnOffsetCommits are settled by the
// transaction's marker. TRANSACTIONAL_ID WRITE, then GROUP READ. From v2 a
// fenced producer gets PRODUCER_FENCED, before that
// INVALID_PRODUCER_EPOCH.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if resp.ErrorCode = s.txnRefusal(c, req.TransactionalID); resp.ErrorCode != 0 {
		return resp, nil
	}
	if !s.allowed(c, auth.OpRead, auth.ResourceGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	partitions := s.Store.Snapshot().Topic(group.Topic)
	if partitions == nil || s.Groups == nil {
		// The group's partition cannot be named before the offsets topic
		// exists; the client retries (and its FindCoordinator creates it).
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	tp := txn.TopicPartition{Topic: group.Topic, Partition: group.Partition(req.Group, partitions.Partitions)}
	resp.ErrorCode = txnErrorCode(s.Txns.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}), req.Version, 2)
	return resp, nil
}
