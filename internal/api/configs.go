package api

// Shared machinery of DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs: each config resource type (topic, broker, broker
// logger; the quota work adds user and client) implements configResource,
// and the three handlers dispatch on the type through configResources.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
	"kbroker/policy"
)

// configEntry is one described config.
type configEntry struct {
	config.Entry
	def       *config.Def // nil for keys outside the catalog
	readOnly  bool
	sensitive bool
}

// configOp is one requested change to a resource's configs. AlterConfigs
// requests become a SET per key plus replace=true.
type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// configResource is one config resource type.
type configResource interface {
	// describe lists the resource's configs (all of them; the caller
	// filters by requested key).
	describe(s *Server, snap *meta.Snapshot, name string) ([]configEntry, error)
	// alter applies ops; with replace, the ops are the resource's whole
	// new override set (legacy AlterConfigs).
	alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []configOp, replace, validateOnly bool) error
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

// errValidateOnly aborts a store transaction after everything validated.
var errValidateOnly = errors.New("validate only")

// storedConfigChange is how topic and broker resources alter the overrides
// kept in the metadata store.
type storedConfigChange struct {
	kind     meta.ConfigKind
	resource policy.ConfigResource
	catalog  *config.Catalog
	// check validates one key being set (known key, type, rules).
	check func(d *config.Def, name, value string) error
	// checkAll validates the whole resulting set (cross-key rules).
	checkAll func(next map[string]string) error
}

// apply runs ops against the stored overrides in one transaction: the new
// set is computed, every changed key validated, the policy consulted, then
// written (unless validateOnly). Changes are logged for audit once applied.
func (sc storedConfigChange) apply(ctx context.Context, s *Server, c *wire.Conn, ops []configOp, replace, validateOnly bool) error {
	var before, after map[string]string
	err := s.Store.UpdateConfigs(ctx, sc.kind, sc.resource.Name, func(cur map[string]string) (map[string]string, error) {
		next, err := applyOps(cur, ops, replace, sc.catalog)
		if err != nil {
			return nil, err
		}
		changed := map[string]*string{}
		for _, op := range ops {
			v, ok := next[op.name]
			if !ok {
				changed[op.name] = nil
				continue
			}
			if old, had := cur[op.name]; had && old == v && sc.kind != meta.BrokerConfigs {
				continue // Kafka leaves unchanged keys out of the policy's view
			}
			changed[op.name] = &v
			d := sc.catalog.Lookup(op.name)
			if d == nil {
				return nil, newError(kerr.InvalidConfig, fmt.Sprintf("Unknown %s config name: %s", kindWord(sc.kind), op.name))
			}
			if err := sc.check(d, op.name, v); err != nil {
				return nil, err
			}
		}
		if sc.checkAll != nil {
			if err := sc.checkAll(next); err != nil {
				return nil, err
			}
		}
		if err := s.checkAlterPolicy(sc.resource, changed); err != nil {
			return nil, err
		}
		if err := s.encryptPasswords(sc.catalog, ops, next); err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		before, after = cur, next
		return next, nil
	})
	if errors.Is(err, errValidateOnly) {
		return nil
	}
	if err == nil {
		s.auditConfigChange(c, sc.resource, sc.catalog, before, after)
	}
	return err
}

func kindWord(k meta.ConfigKind) string {
	if k == meta.TopicConfigs {
		return "topic"
	}
	return "broker"
}

// applyOps computes the new override set. Null values, unknown operations
// and list operations on keys that are not lists are refused as Kafka does.
func applyOps(cur map[string]string, ops []configOp, replace bool, catalog *config.Catalog) (map[string]string, error) {
	next := maps.Clone(cur)
	if replace {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.value == nil && op.op != kmsg.IncrementalAlterConfigOpDelete {
			return nil, newError(kerr.InvalidRequest, fmt.Sprintf("Null value not supported for : %s", op.name))
		}
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.name] = *op.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d := catalog.Lookup(op.name)
			if d == nil {
				return nil, newError(kerr.InvalidConfig, fmt.Sprintf("Unknown config name: %s", op.name))
			}
			if d.Type != config.TypeList {
				return nil, newError(kerr.InvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", opVerb(op.op), op.name))
			}
			base, ok := next[op.name]
			if !ok {
				base = d.Default
			}
			items := config.SplitList(base)
			for _, item := range config.SplitList(*op.value) {
				has := slices.Contains(items, item)
				if op.op == kmsg.IncrementalAlterConfigOpAppend && !has {
					items = append(items, item)
				}
				if op.op == kmsg.IncrementalAlterConfigOpSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == item })
				}
			}
			next[op.name] = strings.Join(items, ",")
		default:
			return nil, newError(kerr.InvalidRequest, fmt.Sprintf("Unknown config operation %d for %s", op.op, op.name))
		}
	}
	return next, nil
}

func opVerb(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpAppend {
		return "APPEND"
	}
	return "SUBTRACT"
}

// checkDuplicateKeys refuses a resource that names one key twice.
func checkDuplicateKeys(ops []configOp) error {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.name] {
			return newError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[op.name] = true
	}
	return nil
}

// checkAlterPolicy runs the embedding program's alter-config policy.
func (s *Server) checkAlterPolicy(res policy.ConfigResource, changed map[string]*string) error {
	if s.AlterConfigPolicy == nil {
		return nil
	}
	if err := s.AlterConfigPolicy.ValidateAlterConfig(policy.AlterConfigRequest{Resource: res, Configs: changed}); err != nil {
		return newError(kerr.PolicyViolation, err.Error())
	}
	return nil
}

// auditConfigChange logs every key an applied change altered, once, with
// who changed it; sensitive values are masked.
func (s *Server) auditConfigChange(c *wire.Conn, res policy.ConfigResource, catalog *config.Catalog, before, after map[string]string) {
	for _, k := range unionKeys(before, after) {
		old, hadOld := before[k]
		cur, hasNew := after[k]
		if hadOld == hasNew && old == cur {
			continue
		}
		if d := catalog.Lookup(k); d == nil || d.Sensitive() {
			old, cur = mask(old, hadOld), mask(cur, hasNew)
		}
		s.Audit.Info("config changed", "principal", c.Principal, "client", c.Remote.String(),
			"resource_type", resourceTypeName(res.Type), "resource", res.Name, "key", k,
			"old", orNull(old, hadOld), "new", orNull(cur, hasNew))
	}
}

func mask(v string, ok bool) string {
	if !ok {
		return v
	}
	return "[hidden]"
}

func orNull(v string, ok bool) string {
	if !ok {
		return "null"
	}
	return v
}

func resourceTypeName(t policy.ResourceType) string {
	return strings.ToLower(kmsg.ConfigResourceType(t).String())
}

// unionKeys lists the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return slices.Sorted(maps.Keys(keys))
}
