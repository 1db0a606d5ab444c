package api

// DeleteTopics (key 20), v0–v6.
//
// Deletes topics by name, or (v6) by id. The topic's metadata goes in one
// store transaction; every broker then deletes the partition logs it holds.
// Errors are per topic: UNKNOWN_TOPIC_OR_PARTITION by name,
// UNKNOWN_TOPIC_ID by id.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/controller"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DeleteTopics, 0, 6, handleDeleteTopics, catchesUp()) }

func handleDeleteTopics(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version < 6 {
		for _, name := range req.TopicNames {
			targets = append(targets, target{name: &name})
		}
	} else {
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	}
	for _, tg := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = tg.name, tg.id
		t, byName, notFound := controller.TopicToDelete(s.Store.Snapshot(), tg.name, tg.id)
		var err error
		switch {
		case byName && !s.deleteDescribable(c, *tg.name):
			err = errTopicAuth
		case notFound != nil:
			err = notFound
		case !s.deletable(c, t.Name):
			err = errTopicAuth
			if !byName && s.deleteDescribable(c, t.Name) {
				name := t.Name
				rt.Topic = &name
			}
		default:
			rt.TopicID = t.ID
			name := t.Name
			rt.Topic = &name
			var throttle time.Duration
			throttle, err = s.admitMutations(c, r, req.Version >= 5, int(t.Partitions))
			addThrottle(resp, throttle)
			if err != nil {
				break
			}
			err = s.controller.DeleteTopic(ctx, t)
		}
		rt.ErrorCode, rt.ErrorMessage = errorCode(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
