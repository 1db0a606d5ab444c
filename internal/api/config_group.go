package api

// The GROUP config resource (type 32, Kafka 4, KIP-848): every key of the
// group catalog (config.Groups), resolved through the group's overrides
// and the broker's group.* synonyms. A group's configs may be set before
// the group exists, as Kafka allows, and outlive it: Kafka's DeleteGroups
// leaves them in place, and so does kbroker's. Overrides live in the store
// under config/groups/<group>; GROUP DESCRIBE_CONFIGS / ALTER_CONFIGS
// guard them (configResourceAllowed).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
	"kbroker/policy"
)

func init() { configResources[kmsg.ConfigResourceTypeGroupConfig] = groupConfigResource{} }

type groupConfigResource struct{}

// checkGroupName refuses the empty name: Kafka has no default entity for
// group configs.
func checkGroupName(name string) error {
	if name == "" {
		return newError(kerr.InvalidRequest, "Group name must not be empty")
	}
	return nil
}

func (groupConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	if err := checkGroupName(name); err != nil {
		return nil, err
	}
	return s.Configs.Group(snap, name), nil
}

func (groupConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	if err := checkGroupName(name); err != nil {
		return err
	}
	return s.Configs.Alter(ctx, dynconfig.Alteration{Resource: policy.ConfigResource{Type: policy.Group, Name: name},
		Ops: ops, Replace: replace, ValidateOnly: validateOnly, By: requester(c)})
}
