package api

// The TOPIC config resource: every topic config of the catalog, resolved
// through the topic's overrides and the broker's synonyms; overrides live in
// the metadata store under config/topics/<topic>.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
	"kbroker/policy"
)

type topicConfigResource struct{}

func (topicConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	if snap.Topic(name) == nil {
		return nil, unknownTopic(name)
	}
	return s.Configs.Topic(snap, name), nil
}

func (topicConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	if s.Store.Snapshot().Topic(name) == nil {
		return unknownTopic(name)
	}
	return s.Configs.Alter(ctx, dynconfig.Alteration{Resource: policy.ConfigResource{Type: policy.Topic, Name: name},
		Ops: ops, Replace: replace, ValidateOnly: validateOnly, By: requester(c)})
}

// unknownTopic is Kafka's controller's refusal of a config change to a
// topic that does not exist (QuorumController); describe answers with the
// same text so that every per-resource error says what went wrong.
func unknownTopic(name string) error {
	return newError(kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", name))
}
