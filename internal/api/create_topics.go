package api

// CreateTopics (key 19), v0–v7.
//
// Creates topics with a partition count and replication factor (or -1 for
// the broker defaults, v4+) or a manual replica assignment, and config
// overrides validated against the topic config catalog. validate_only (v1+)
// runs every check and creates nothing. Errors are per topic; a name listed
// twice gets INVALID_REQUEST. v5+ returns the new topic's partition count,
// replication factor and effective configs; v7 its id. As in Kafka's
// controller, counts and configs go only to a principal that may
// DESCRIBE_CONFIGS the topic: anyone else still creates it, but gets
// topic_config_error_code TOPIC_AUTHORIZATION_FAILED in their place.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/controller"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics, catchesUp()) }

func handleCreateTopics(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	names := make([]string, len(req.Topics))
	for i, rt := range req.Topics {
		names[i] = rt.Topic
	}
	errs := controller.DuplicateTopics(r.ClientID, names)
	// Check every topic (the create-topic policy included) before any is
	// written, then create the valid ones in one store transaction.
	snap := s.Store.Snapshot()
	specs := make([]*controller.TopicSpec, len(req.Topics))
	for i, rt := range req.Topics {
		if errs[i] != nil {
			continue
		}
		if !s.createAllowed(c, rt.Topic) {
			errs[i] = errTopicAuth
			continue
		}
		if specs[i], errs[i] = specFromRequest(rt); errs[i] == nil {
			specs[i].By = policyRequester(c)
			errs[i] = s.controller.CheckTopic(snap, specs[i])
		}
		if errs[i] == nil && !req.ValidateOnly {
			var throttle time.Duration
			throttle, errs[i] = s.admitMutations(c, r, req.Version >= 6, int(specs[i].Partitions))
			addThrottle(resp, throttle)
		}
	}
	created := make([]*meta.Topic, len(req.Topics))
	if !req.ValidateOnly {
		created = s.controller.CreateTopics(ctx, snap, specs, errs)
		snap = s.Store.Snapshot()
	}
	for i, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		if errs[i] == nil {
			s.describeCreated(c, snap, specs[i], created[i], &st)
		}
		st.ErrorCode, st.ErrorMessage = errorCode(errs[i])
		if req.Version < 1 {
			st.ErrorMessage = nil
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// specFromRequest reads one requested topic.
func specFromRequest(rt kmsg.CreateTopicsRequestTopic) (*controller.TopicSpec, error) {
	spec := &controller.TopicSpec{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor,
		Configs: map[string]string{}}
	if len(rt.ReplicaAssignment) > 0 {
		spec.Assignment = map[int32][]int32{}
		for _, a := range rt.ReplicaAssignment {
			spec.Assignment[a.Partition] = a.Replicas
		}
	}
	for _, cfg := range rt.Configs {
		if cfg.Value == nil {
			return nil, newError(kerr.InvalidConfig, fmt.Sprintf("Null value not supported for topic configs: %s", cfg.Name))
		}
		spec.Configs[cfg.Name] = *cfg.Value
	}
	return spec, nil
}

// describeCreated fills what v5+ responses carry about the new (or, with
// validate_only, would-be) topic: id, and counts and effective configs if
// the principal may see them.
func (s *Server) describeCreated(c *wire.Conn, snap *meta.Snapshot, spec *controller.TopicSpec, t *meta.Topic, st *kmsg.CreateTopicsResponseTopic) {
	if t != nil {
		st.TopicID = t.ID
	}
	if err := s.topicAllowed(c, auth.OpDescribeConfigs, spec.Name); err != nil {
		// Counts stay -1 and configs null, as Kafka leaves them.
		st.ConfigErrorCode, _ = errorCode(err)
		return
	}
	st.NumPartitions, st.ReplicationFactor = spec.Partitions, spec.ReplicationFactor
	layers := s.Configs.Layers(snap, spec.Name)
	layers.Topic = spec.Configs
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
}
