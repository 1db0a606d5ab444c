package api

// TxnOffsetCommit (key 28), v0–v5.
//
// Commits a group's offsets inside the producer's transaction (KIP-98), at
// the group's coordinator: written to `__consumer_offsets` as a
// transactional batch, pending until the transaction's marker (OffsetFetch
// with RequireStable answers UNSTABLE_OFFSET_COMMIT meanwhile). There is no
// top-level error: TRANSACTIONAL_ID WRITE, then GROUP READ, fail every
// partition; TOPIC READ and an unknown topic or partition fail their own.
// v3+ member id and generation are checked (KIP-447), so a zombie of an
// older generation is refused. v6 (topic ids) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/group"
	"kbroker/internal/wire"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := int16(0)
	switch {
	case !s.transactionalIDAllowed(c, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.groupReadAllowed(c, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	case !s.groupsServed():
		code = codeNoGroupCoordinator
	}
	if code != 0 {
		resp.Topics = group.TxnCommitErrors(req.Topics, code)
		return resp, nil
	}
	snap := s.Store.Snapshot()
	accepted := *req
	accepted.Topics = nil
	for _, t := range req.Topics {
		code, ok, unknown := commitTopic(s, c, snap, t.Topic, t.Partitions, func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
		if code != 0 {
			resp.Topics = append(resp.Topics, group.TxnCommitErrors([]kmsg.TxnOffsetCommitRequestTopic{t}, code)...)
			continue
		}
		if len(unknown) > 0 {
			u := t
			u.Partitions = unknown
			resp.Topics = append(resp.Topics, group.TxnCommitErrors([]kmsg.TxnOffsetCommitRequestTopic{u}, kerr.UnknownTopicOrPartition.Code)...)
		}
		if len(ok) > 0 {
			t.Partitions = ok
			accepted.Topics = append(accepted.Topics, t)
		}
	}
	if len(accepted.Topics) > 0 {
		resp.Topics = append(s.Groups.TxnCommit(ctx, &accepted), resp.Topics...)
	}
	return resp, nil
}
