package api

// EndTxn (key 26), v0–v5.
//
// Commits or aborts the producer's transaction at its coordinator
// (TRANSACTIONAL_ID WRITE): answered once PrepareCommit or PrepareAbort is
// written; the markers and Complete* follow. A retry after completion gets
// the first answer again; while the markers are in flight,
// CONCURRENT_TRANSACTIONS; no transaction or the other outcome,
// INVALID_TXN_STATE. From v2 a fenced producer gets PRODUCER_FENCED,
// before that INVALID_PRODUCER_EPOCH. v5 answers the producer id and epoch
// to use next; kbroker does not finalize transaction.version 2, so the
// epoch is not bumped per transaction (clients send v5 only under TV2).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	resp.ErrorCode = txnErrorCode(s.Txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), req.Version, 2)
	if resp.ErrorCode == 0 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	return resp, nil
}
