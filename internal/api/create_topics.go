package api

// CreateTopics (key 19), v0–v7.
//
// Creates topics with a partition count and replication factor (or -1 for
// the broker defaults, v4+) or a manual replica assignment, and config
// overrides validated against the topic config catalog. validate_only (v1+)
// runs every check and creates nothing. Errors are per topic; a name listed
// twice gets INVALID_REQUEST. v5+ returns the new topic's partition count,
// replication factor and effective configs; v7 its id.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics) }

func handleCreateTopics(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	counts := map[string]int{}
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if counts[rt.Topic] > 1 {
			err = newError(kerr.InvalidRequest, fmt.Sprintf("Create topics request from client `%s` contains multiple entries for the following topics: %s", r.ClientID, rt.Topic))
		} else {
			err = s.createOne(ctx, req, rt, &st)
		}
		st.ErrorCode, st.ErrorMessage = errorCode(err)
		if req.Version < 1 {
			st.ErrorMessage = nil
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) createOne(ctx context.Context, req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic) error {
	spec := &topicSpec{name: rt.Topic, partitions: rt.NumPartitions, replicationFactor: rt.ReplicationFactor,
		configs: map[string]string{}}
	if len(rt.ReplicaAssignment) > 0 {
		spec.assignment = map[int32][]int32{}
		for _, a := range rt.ReplicaAssignment {
			spec.assignment[a.Partition] = a.Replicas
		}
	}
	for _, cfg := range rt.Configs {
		if cfg.Value == nil {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Null value not supported for topic configs: %s", cfg.Name))
		}
		spec.configs[cfg.Name] = *cfg.Value
	}
	snap := s.Store.Snapshot()
	t := &meta.Topic{Name: rt.Topic}
	if req.ValidateOnly {
		if err := s.checkTopic(snap, spec); err != nil {
			return err
		}
		t.Partitions, t.ReplicationFactor = spec.partitions, spec.replicationFactor
	} else {
		created, err := s.createTopic(ctx, spec)
		if err != nil {
			return err
		}
		t, snap = created, s.Store.Snapshot()
	}
	st.TopicID = t.ID
	st.NumPartitions = t.Partitions
	st.ReplicationFactor = t.ReplicationFactor
	layers := s.Logs.Layers(snap, t.Name)
	layers.Topic = spec.configs
	for _, d := range config.Topics.Defs() {
		e := config.ResolveTopic(d, layers)
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name = d.Name
		rc.Source = int8(e.Source)
		rc.IsSensitive = d.Sensitive()
		if !rc.IsSensitive {
			rc.Value = e.Value
		}
		st.Configs = append(st.Configs, rc)
	}
	return nil
}
