package api

// OffsetCommit (key 8), v0–v9.
//
// Stores a group's committed offsets in `__consumer_offsets` before
// answering (internal/group). There is no top-level error: a refused group
// (GROUP READ) fails every partition, a topic without READ fails its own
// (TOPIC_AUTHORIZATION_FAILED), an unknown topic or partition gets
// UNKNOWN_TOPIC_OR_PARTITION. v10 (topic ids) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/wire"
)

func init() { register(kmsg.OffsetCommit, 0, 9, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if code := s.groupRefusal(c, req.Group); code != 0 {
		// No top-level error in OffsetCommit: every partition carries it.
		resp.Topics = group.CommitErrors(req.Topics, code)
		return resp, nil
	}
	snap := s.Store.Snapshot()
	accepted := *req
	accepted.Topics = nil
	for _, t := range req.Topics {
		topic := snap.Topic(t.Topic)
		code := int16(0)
		switch {
		case !s.allowed(c, auth.OpRead, auth.ResourceTopic, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case topic == nil:
			code = kerr.UnknownTopicOrPartition.Code
		}
		if code != 0 {
			resp.Topics = append(resp.Topics, group.CommitErrors([]kmsg.OffsetCommitRequestTopic{t}, code)...)
			continue
		}
		ok, unknown := t, t
		ok.Partitions, unknown.Partitions = nil, nil
		for _, p := range t.Partitions {
			if p.Partition < 0 || p.Partition >= topic.Partitions {
				unknown.Partitions = append(unknown.Partitions, p)
			} else {
				ok.Partitions = append(ok.Partitions, p)
			}
		}
		if len(unknown.Partitions) > 0 {
			resp.Topics = append(resp.Topics, group.CommitErrors([]kmsg.OffsetCommitRequestTopic{unknown}, kerr.UnknownTopicOrPartition.Code)...)
		}
		if len(ok.Partitions) > 0 {
			accepted.Topics = append(accepted.Topics, ok)
		}
	}
	if len(accepted.Topics) > 0 || len(req.Topics) == 0 {
		resp.Topics = append(s.Groups.Commit(ctx, &accepted), resp.Topics...)
	}
	return resp, nil
}
