package api

// DescribeTransactions (key 65), v0.
//
// Describes transactional ids this broker coordinates (KIP-664): state,
// timeout, start time, producer id and epoch, partitions. TRANSACTIONAL_ID
// DESCRIBE per id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); partitions of
// topics the principal may not DESCRIBE are left out, as Kafka does. An
// unknown id is TRANSACTIONAL_ID_NOT_FOUND, one coordinated elsewhere
// NOT_COORDINATOR.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		switch {
		case !s.transactionalIDDescribable(c, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case s.Txns == nil:
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			d := s.Txns.Describe(ctx, id)
			if d.Err != nil {
				st.ErrorCode = d.Err.Code
				break
			}
			st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMillis, d.StartMillis
			st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
			visible := d.Partitions[:0]
			for _, tp := range d.Partitions {
				if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, tp.Topic) {
					visible = append(visible, tp)
				}
			}
			st.Topics = txn.DescribedTopics(visible)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
