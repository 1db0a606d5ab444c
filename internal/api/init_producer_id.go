package api

// InitProducerId (key 22), v0–v5.
//
// Without a transactional id: a new producer id with epoch 0 for an
// idempotent producer, as Kafka does (a producer that asks again after a
// fatal sequence error gets a fresh id), from the broker's txn.ProducerIDs,
// the allocator the transaction coordinator uses too. With one
// (TRANSACTIONAL_ID WRITE, at its coordinator): the transaction
// coordinator's InitProducerID — a new id, or an epoch bump that fences
// the previous producer, or, with a transaction open, its abort and
// CONCURRENT_TRANSACTIONS. v3+ carries the current producer id and epoch
// (KIP-360); before v4 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH (KIP-588).
// "" is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		id := *req.TransactionalID
		switch {
		case !s.transactionalIDAllowed(c, id): // refused before anything else, as Kafka does
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case id == "":
			resp.ErrorCode = kerr.InvalidRequest.Code
		case s.Txns == nil:
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			pid, epoch := int64(-1), int16(-1)
			if req.Version >= 3 {
				pid, epoch = req.ProducerID, req.ProducerEpoch
			}
			res := s.Txns.InitProducerID(ctx, id, req.TransactionTimeoutMillis, pid, epoch)
			resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
			resp.ErrorCode = txnErrorCode(res.Err, req.Version, 4)
		}
		return resp, nil
	}
	if !s.idempotentAllowed(c) { // KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on some topic
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	id, err := s.ProducerIDs.Next(ctx)
	if err != nil {
		resp.ErrorCode, _ = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
