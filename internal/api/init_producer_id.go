package api

// InitProducerId (key 22), v0–v5.
//
// Gives an idempotent producer a new producer id with epoch 0, as Kafka
// does for producers without a transactional id (a producer that asks again
// after a fatal sequence error gets a fresh id), from txn.ProducerIDs.
// Transactional ids are refused with INVALID_REQUEST: kbroker has no
// transaction coordinator yet.

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
		resp.ErrorCode = kerr.InvalidRequest.Code
		if !s.transactionalIDAllowed(c, *req.TransactionalID) { // refused before anything else, as Kafka does
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return resp, nil
	}
	if !s.idempotentAllowed(c) { // KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on some topic
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	id, err := s.producerIDs.Next(ctx)
	if err != nil {
		resp.ErrorCode, _ = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
