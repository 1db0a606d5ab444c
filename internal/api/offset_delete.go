package api

// OffsetDelete (key 47), v0.
//
// Deletes a group's committed offsets for some partitions (KIP-496): GROUP
// DELETE, then TOPIC READ per topic. A group with members may lose only the
// offsets of topics none of them subscribes to (GROUP_SUBSCRIBED_TO_TOPIC;
// NON_EMPTY_GROUP when its subscriptions are not readable consumer ones).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/wire"
)

func init() { register(kmsg.OffsetDelete, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	switch {
	case !s.allowed(c, auth.OpDelete, auth.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	case !s.groupsServed():
		resp.ErrorCode = codeNoGroupCoordinator
		return resp, nil
	}
	snap := s.Store.Snapshot()
	var topics []group.FetchTopic
	var refused []kmsg.OffsetDeleteResponseTopic
	for _, t := range req.Topics {
		code := int16(0)
		switch topic := snap.Topic(t.Topic); {
		case !s.allowed(c, auth.OpRead, auth.ResourceTopic, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case topic == nil:
			code = kerr.UnknownTopicOrPartition.Code
		}
		if code == 0 {
			ft := group.FetchTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				ft.Partitions = append(ft.Partitions, p.Partition)
			}
			topics = append(topics, ft)
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
	}
	got, code := s.Groups.DeleteOffsets(ctx, req.Group, topics)
	resp.ErrorCode = code
	if code == 0 {
		resp.Topics = append(got, refused...)
	}
	return resp, nil
}
