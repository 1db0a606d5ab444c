package api

// CreatePartitions (key 37), v0–v3.
//
// Raises a topic's partition count (never lowers it), with an optional
// manual assignment of the new partitions. validate_only checks and changes
// nothing. Errors are per topic; a topic listed twice gets INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/controller"
	"kbroker/internal/wire"
)

func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions, catchesUp()) }

func handleCreatePartitions(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	counts := map[string]int{}
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if counts[rt.Topic] > 1 {
			err = newError(kerr.InvalidRequest, "Duplicate topic in request: "+rt.Topic)
		} else if err = s.topicAllowed(c, auth.OpAlter, rt.Topic); err == nil {
			err = s.createPartitions(ctx, c, r, rt, req.ValidateOnly, resp)
		}
		st.ErrorCode, st.ErrorMessage = errorCode(err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createPartitions checks one topic's increase, admits it against the
// controller mutation quota and has the controller store it.
func (s *Server) createPartitions(ctx context.Context, c *wire.Conn, r *wire.Request, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool, resp *kmsg.CreatePartitionsResponse) error {
	inc := controller.PartitionIncrease{Topic: rt.Topic, Count: rt.Count}
	if rt.Assignment != nil {
		inc.Assignment = make([][]int32, 0, len(rt.Assignment))
		for _, a := range rt.Assignment {
			inc.Assignment = append(inc.Assignment, a.Replicas)
		}
	}
	checked, err := s.controller.CheckPartitions(s.Store.Snapshot(), inc)
	if err == nil {
		err = s.checkPartitionsPolicy(c, rt.Topic, rt.Count, checked.Added, inc.Assignment)
	}
	if err != nil || validateOnly {
		return err
	}
	throttle, err := s.admitMutations(c, r, r.Version >= 3, int(checked.Added))
	addThrottle(resp, throttle)
	if err != nil {
		return err
	}
	return s.controller.CreatePartitions(ctx, checked)
}
