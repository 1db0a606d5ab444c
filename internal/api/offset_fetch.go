package api

// OffsetFetch (key 9), v0–v9.
//
// Returns a group's committed offsets: -1 with metadata "" for a partition
// without a commit (or an unknown group). v2+ null topics asks for every
// topic with commits (those the principal may not DESCRIBE are silently
// left out); explicit topics without DESCRIBE get
// TOPIC_AUTHORIZATION_FAILED. v7 RequireStable (KIP-447): a partition with
// a transactional commit still pending gets UNSTABLE_OFFSET_COMMIT
// (retriable); without it the last committed offset. v8+ batches
// groups, each with its own error; v9 names the KIP-848 member asking,
// which must exist at that epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH);
// before v2 a group error is copied onto every partition. v10 (topic ids) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/wire"
)

func init() { register(kmsg.OffsetFetch, 0, 9, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			var topics []group.FetchTopic
			if g.Topics != nil {
				topics = make([]group.FetchTopic, 0, len(g.Topics))
				for _, t := range g.Topics {
					topics = append(topics, group.FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			rg.Topics, rg.ErrorCode = s.fetchOffsets(ctx, c, g.Group, topics, req.RequireStable)
			if req.Version >= 9 && rg.ErrorCode == 0 {
				// A KIP-848 member fetching its group's offsets must be
				// the member it says, at its current epoch.
				if code := s.Groups.ValidateFetchMember(ctx, g.Group, g.MemberID, g.MemberEpoch); code != 0 {
					rg.Topics, rg.ErrorCode = nil, code
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	var topics []group.FetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]group.FetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, group.FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	got, code := s.fetchOffsets(ctx, c, req.Group, topics, req.Version >= 7 && req.RequireStable)
	if code != 0 && req.Version < 2 {
		// No top-level error before v2: every partition carries it.
		got = fetchAnswer(topics, code)
	}
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	for _, t := range got {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchOffsets answers one group: GROUP DESCRIBE first, then TOPIC
// DESCRIBE per topic.
func (s *Server) fetchOffsets(ctx context.Context, c *wire.Conn, groupID string, topics []group.FetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	switch {
	case !s.allowed(c, auth.OpDescribe, auth.ResourceGroup, groupID):
		return nil, kerr.GroupAuthorizationFailed.Code
	case !s.groupsServed():
		return nil, codeNoGroupCoordinator
	}
	if topics == nil {
		all, code := s.Groups.FetchStable(ctx, groupID, nil, requireStable)
		out := all[:0]
		for _, t := range all {
			if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Topic) {
				out = append(out, t)
			}
		}
		return out, code
	}
	allowed := make([]group.FetchTopic, 0, len(topics)) // non-nil: nil asks for every topic
	var denied []group.FetchTopic
	for _, t := range topics {
		if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	out, code := s.Groups.FetchStable(ctx, groupID, allowed, requireStable)
	if code != 0 {
		return nil, code
	}
	return append(out, fetchAnswer(denied, kerr.TopicAuthorizationFailed.Code)...), 0
}

// fetchAnswer answers every partition of topics with code and no offset.
func fetchAnswer(topics []group.FetchTopic, code int16) []kmsg.OffsetFetchResponseGroupTopic {
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			empty := ""
			rp.Metadata = &empty
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
