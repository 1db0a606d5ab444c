package api

// EndTxn (key 26), v0–v5.
//
// Commits or aborts the producer's transaction at its coordinator
// (TRANSACTIONAL_ID WRITE): answered once PrepareCommit or PrepareAbort is
// written; the markers and Complete* follow. A retry after completion gets
// the first answer again; while the markers are in flight,
// CONCURRENT_TRANSACTIONS; no transaction or the other outcome,
// INVALID_TXN_STATE. From v2 a fenced producer gets PRODUCER_FENCED,
// before that INVALID_PRODUCER_EPOCH. v5 is Transactions V2 (KIP-890 part
// 2; clients send it only when transaction.version 2 is finalized): the
// epoch is bumped at every EndTxn and the answer carries the producer id
// and epoch to go on with (a new producer id at epoch 0 once the epoch
// runs out); a retry, one epoch behind, gets the current ones again; an
// abort with no transaction open is allowed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.EndTxn, 0, 5, handleEndTxn) }

func handleEndTxn(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if resp.ErrorCode = s.txnRefusal(c, req.TransactionalID); resp.ErrorCode != 0 {
		return resp, nil
	}
	// Kafka takes the transaction version from the request's: v5+ is TV2.
	tv := txn.TV1
	if req.Version >= 5 {
		tv = txn.TV2
	}
	res := s.Txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
	resp.ErrorCode = txnErrorCode(res.Err, req.Version, 2)
	if resp.ErrorCode == 0 {
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
	}
	return resp, nil
}
