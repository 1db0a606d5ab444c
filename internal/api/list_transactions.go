package api

// ListTransactions (key 66), v0–v2.
//
// Lists the transactional ids this broker coordinates (KIP-664), silently
// leaving out those the principal may not DESCRIBE. Filters: states (names
// Kafka does not know are echoed in UnknownStateFilters and match
// nothing), producer ids, v1 a minimum duration of the open transaction
// (KIP-994), v2 an RE2 pattern on the id (KIP-1152; a bad one is
// INVALID_REGULAR_EXPRESSION).

import (
	"context"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ListTransactions, 0, 2, handleListTransactions) }

func handleListTransactions(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if s.Txns == nil {
		return resp, nil
	}
	var f txn.ListFilter
	for _, name := range req.StateFilters {
		if st, ok := txn.StateNamed(name); ok {
			f.States = append(f.States, st)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp, nil // only unknown states: nothing matches
	}
	f.ProducerIDs = req.ProducerIDFilters
	if req.Version >= 1 && req.DurationFilterMillis > 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		// Kafka matches the whole id (Matcher.matches).
		re, err := regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = re
	}
	for _, l := range s.Txns.List(ctx, f) {
		if !s.transactionalIDDescribable(c, l.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.TransactionalID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
