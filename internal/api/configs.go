package api

// Shared machinery of DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs: each config resource type (topic, broker, broker
// logger, and the quota entities user and client) implements
// configResource (a group's configs too, config_group.go), and the three
// handlers dispatch on the type through configResources. Changes of topic,
// broker and group configs are the dynamic
// configuration's (internal/dynconfig): validation, policy, encryption,
// storage, audit and applying them.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

// configResource is one config resource type.
type configResource interface {
	// describe lists the resource's configs (all of them; the caller
	// filters by requested key).
	describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error)
	// alter applies ops; with replace, the ops are the resource's whole
	// new override set (legacy AlterConfigs).
	alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error
}

// configResources maps wire resource types to their implementation.
var configResources = map[kmsg.ConfigResourceType]configResource{
	kmsg.ConfigResourceTypeTopic:        topicConfigResource{},
	kmsg.ConfigResourceTypeBroker:       brokerConfigResource{},
	kmsg.ConfigResourceTypeBrokerLogger: loggerConfigResource{},
}

// resourceKey identifies a resource in a request, to find duplicates.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// requester is who sent c's requests, for the audit log.
func requester(c *wire.Conn) dynconfig.Requester {
	return dynconfig.Requester{Principal: c.Principal, Client: c.Remote.String(), Listener: c.Listener}
}

// alterResources applies each resource's ops independently and returns one
// error (or nil) per resource, in request order. It serves both alter APIs.
func (s *Server) alterResources(ctx context.Context, c *wire.Conn, keys []resourceKey, ops [][]dynconfig.Op, replace, validateOnly bool) []error {
	count := map[resourceKey]int{}
	for _, k := range keys {
		count[k]++
	}
	errs := make([]error, len(keys))
	for i, k := range keys {
		res := configResources[k.typ]
		switch {
		case count[k] > 1:
			errs[i] = newError(kerr.InvalidRequest, "Each resource must appear at most once.")
		case res == nil:
			errs[i] = newError(kerr.InvalidRequest, fmt.Sprintf("Unknown resource type %d", k.typ))
		default:
			if errs[i] = s.configResourceAllowed(c, k.typ, k.name, auth.OpAlterConfigs); errs[i] != nil {
				break
			}
			if errs[i] = checkDuplicateKeys(ops[i]); errs[i] == nil {
				errs[i] = res.alter(ctx, s, c, k.name, ops[i], replace, validateOnly)
			}
		}
	}
	return errs
}

// checkDuplicateKeys refuses a resource that names one key twice.
func checkDuplicateKeys(ops []dynconfig.Op) error {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return newError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[op.Name] = true
	}
	return nil
}

// resourceError is a config resource's error code and message. Every
// per-resource error carries a message: one decided without a text of its
// own gets its Kafka error's description.
func resourceError(err error) (int16, *string) {
	code, msg := errorCode(err)
	if msg != nil && *msg == "" {
		if k := kerr.ErrorForCode(code); k != nil {
			if ke, ok := k.(*kerr.Error); ok {
				d := ke.Description
				msg = &d
			}
		}
	}
	return code, msg
}
