package api

// CreatePartitions (key 37), v0–v3.
//
// Raises a topic's partition count (never lowers it), with an optional
// manual assignment of the new partitions. validate_only checks and changes
// nothing. Errors are per topic; a topic listed twice gets INVALID_REQUEST.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

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

func (s *Server) createPartitions(ctx context.Context, c *wire.Conn, r *wire.Request, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool, resp *kmsg.CreatePartitionsResponse) error {
	t := s.Store.Snapshot().Topic(rt.Topic)
	if t == nil {
		return newError(kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic))
	}
	if rt.Count <= t.Partitions {
		if rt.Count == t.Partitions {
			return newError(kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partitions.", t.Partitions))
		}
		return newError(kerr.InvalidPartitions, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, t.Partitions, rt.Count))
	}
	var replicas [][]int32
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(rt.Count-t.Partitions) {
			return newError(kerr.InvalidReplicaAssignment, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", rt.Count-t.Partitions, len(rt.Assignment)))
		}
		assignment := map[int32][]int32{}
		for i, a := range rt.Assignment {
			assignment[t.Partitions+int32(i)] = a.Replicas
		}
		if err := s.checkAssignment(assignment, t.Partitions); err != nil {
			return err
		}
		for _, a := range rt.Assignment {
			if err := s.checkReplicationFactor(int16(len(a.Replicas))); err != nil {
				return err
			}
			replicas = append(replicas, a.Replicas)
		}
	}
	if err := checkRecordCount(int64(rt.Count) - int64(t.Partitions)); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	throttle, err := s.admitMutations(c, r, r.Version >= 3, int(rt.Count-t.Partitions))
	addThrottle(resp, throttle)
	if err != nil {
		return err
	}
	if replicas == nil { // placed only now that the count passed every check
		replicas = s.place(s.Store.Snapshot(), rt.Count-t.Partitions)
	}
	return s.Store.AddPartitions(ctx, rt.Topic, rt.Count, replicas)
}
