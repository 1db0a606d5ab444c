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
	"kbroker/internal/meta"
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
		code, ok, unknown := commitTopic(s, c, snap, t.Topic, t.Partitions, func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
		if code != 0 {
			resp.Topics = append(resp.Topics, group.CommitErrors([]kmsg.OffsetCommitRequestTopic{t}, code)...)
			continue
		}
		if len(unknown) > 0 {
			u := t
			u.Partitions = unknown
			resp.Topics = append(resp.Topics, group.CommitErrors([]kmsg.OffsetCommitRequestTopic{u}, kerr.UnknownTopicOrPartition.Code)...)
		}
		if len(ok) > 0 {
			t.Partitions = ok
			accepted.Topics = append(accepted.Topics, t)
		}
	}
	if len(accepted.Topics) > 0 || len(req.Topics) == 0 {
		resp.Topics = append(s.Groups.Commit(ctx, &accepted), resp.Topics...)
	}
	return resp, nil
}

// commitTopic is the per-topic check OffsetCommit and TxnOffsetCommit share,
// before the group coordinator sees the commit: TOPIC READ, then a known
// topic (else code); partitions outside the topic are split off as unknown.
func commitTopic[P any](s *Server, c *wire.Conn, snap *meta.Snapshot, name string, parts []P, partition func(P) int32) (code int16, ok, unknown []P) {
	topic := snap.Topic(name)
	switch {
	case !s.allowed(c, auth.OpRead, auth.ResourceTopic, name):
		return kerr.TopicAuthorizationFailed.Code, nil, nil
	case topic == nil:
		return kerr.UnknownTopicOrPartition.Code, nil, nil
	}
	for _, p := range parts {
		if n := partition(p); n < 0 || n >= topic.Partitions {
			unknown = append(unknown, p)
		} else {
			ok = append(ok, p)
		}
	}
	return 0, ok, unknown
}
