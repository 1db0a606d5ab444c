package api

// The USER (7) and CLIENT (6) config resources, kbroker's own extension
// (Apache Kafka serves quotas only through the client-quota APIs; its
// config resource types are 2, 4, 8, 16 and 32, so 6 and 7 collide with
// none): quotas read and written through DescribeConfigs / AlterConfigs /
// IncrementalAlterConfigs. Names: "alice", "<default>", and for a (user,
// client-id) pair a USER named "alice/clients/c1" (any part may be
// "<default>"); names are sanitized as Kafka does. Alter writes exactly
// that entity — the same data AlterClientQuotas writes.
//
// Describe answers "what limits apply here, and where do they come from":
// each quota key's effective value for a connection of that user and/or
// client-id (a USER alone is asked with an empty client-id, a CLIENT alone
// with an empty user), with every precedence level that has a value as a
// synonym named by entity path, most specific first. Sources: set on this
// very entity → DYNAMIC_TOPIC_CONFIG's code (1, "the entity's own
// override"), from another dynamic entity → DYNAMIC_DEFAULT_BROKER_CONFIG,
// from server.properties → STATIC_BROKER_CONFIG, unlimited →
// DEFAULT_CONFIG with a null value.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

// Config resource types for quotas (USER and CLIENT): kbroker's numbers,
// unused by Apache Kafka's config resource types.
const (
	configResourceClient kmsg.ConfigResourceType = 6
	configResourceUser   kmsg.ConfigResourceType = 7
)

func init() {
	configResources[configResourceUser] = quotaConfigResource{user: true}
	configResources[configResourceClient] = quotaConfigResource{user: false}
}

// quotaKeys are the keys a user or client entity may carry, in order.
var quotaKeys = []struct {
	name string
	typ  config.Type
	doc  string
}{
	{quota.ConsumerByteRate, config.TypeLong, "Bytes per second of Fetch responses this entity may receive from one broker."},
	{quota.ControllerMutationRate, config.TypeDouble, "Partitions per second this entity may create or delete."},
	{quota.ProducerByteRate, config.TypeLong, "Bytes per second of Produce requests this entity may send to one broker."},
	{quota.RequestPercentage, config.TypeDouble, "Percent of one request-handling thread this entity may use per quota window."},
}

type quotaConfigResource struct{ user bool }

// entity parses a USER or CLIENT resource name.
func (q quotaConfigResource) entity(name string) (quota.Entity, error) {
	part := func(s string) (*string, error) {
		if s == "" {
			return nil, newError(kerr.InvalidRequest, "empty entity name; use <default> for the default entity")
		}
		if s == "<default>" {
			return nil, nil
		}
		raw, err := quota.Desanitize(s)
		if err != nil {
			return nil, newError(kerr.InvalidRequest, fmt.Sprintf("bad entity name %q: %v", s, err))
		}
		return &raw, nil
	}
	var e quota.Entity
	var err error
	if !q.user {
		e.HasClientID = true
		e.ClientID, err = part(name)
		return e, err
	}
	e.HasUser = true
	userPart, clientPart, pair := strings.Cut(name, "/clients/")
	if e.User, err = part(userPart); err != nil {
		return e, err
	}
	if pair {
		e.HasClientID = true
		e.ClientID, err = part(clientPart)
	}
	return e, err
}

func (q quotaConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	e, err := q.entity(name)
	if err != nil {
		return nil, err
	}
	// A default part stands for a name with no override of its own.
	user, client := "", ""
	if e.HasUser {
		user = "<default>"
		if e.User != nil {
			user = *e.User
		}
	}
	if e.HasClientID {
		client = "<default>"
		if e.ClientID != nil {
			client = *e.ClientID
		}
	}
	own := snap.QuotaOverride(e.Path())
	var out []dynconfig.Described
	for _, k := range quotaKeys {
		limit, levels, ok := s.Quotas.Resolve(user, client, k.name)
		entry := config.Entry{Name: k.name, Source: config.SourceDefault}
		if ok {
			v := strconv.FormatFloat(limit, 'f', -1, 64)
			entry.Value = &v
			entry.Source = levelSource(levels[0], own, k.name)
		}
		for _, l := range levels {
			v := strconv.FormatFloat(l.Value, 'f', -1, 64)
			name := l.Path
			if l.Static {
				name = "server.properties"
			}
			entry.Synonyms = append(entry.Synonyms, config.Entry{Name: name, Value: &v, Source: levelSource(l, own, k.name)})
		}
		d := &config.Def{Name: k.name, Type: k.typ, Doc: k.doc}
		out = append(out, dynconfig.Described{Entry: entry, Def: d})
	}
	return out, nil
}

// levelSource says where a level's value comes from, in DescribeConfigs'
// vocabulary (see the file comment).
func levelSource(l quota.Level, own map[string]float64, key string) config.Source {
	if l.Static {
		return config.SourceStaticBroker
	}
	if v, ok := own[key]; ok && v == l.Value {
		return config.SourceTopic
	}
	return config.SourceDynamicDefaultBroker
}

func (q quotaConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	e, err := q.entity(name)
	if err != nil {
		return err
	}
	var qops []quotaOp
	if replace { // AlterConfigs: keys left out are removed
		for _, k := range quotaKeys {
			qops = append(qops, quotaOp{key: k.name, remove: true})
		}
	}
	for _, op := range ops {
		var qop quotaOp
		switch op.Kind {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return newError(kerr.InvalidRequest, "Null value not supported for : "+op.Name)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(*op.Value), 64)
			if err != nil {
				return newError(kerr.InvalidConfig, fmt.Sprintf("Invalid value %s for configuration %s: Not a number", *op.Value, op.Name))
			}
			qop = quotaOp{key: op.Name, value: v}
		case kmsg.IncrementalAlterConfigOpDelete:
			qop = quotaOp{key: op.Name, remove: true}
		default:
			return dynconfig.NotAList(op)
		}
		qops = replaceQuotaOp(qops, qop)
	}
	return s.alterQuotas(ctx, c, []quotaChange{{path: e.Path(), ops: qops}}, validateOnly)[0]
}

// replaceQuotaOp puts op in ops, replacing an earlier op on the same key.
func replaceQuotaOp(ops []quotaOp, op quotaOp) []quotaOp {
	for i := range ops {
		if ops[i].key == op.key {
			ops[i] = op
			return ops
		}
	}
	return append(ops, op)
}

// errValidateOnly aborts a store transaction after everything validated.
var errValidateOnly = errors.New("validate only")

// quotaOp sets or removes one key.
type quotaOp struct {
	key    string
	value  float64
	remove bool
}

// quotaChange is the ops requested for one entity.
type quotaChange struct {
	path string
	ops  []quotaOp
}

// alterQuotas applies each entity's ops, for AlterClientQuotas and for the
// USER and CLIENT config resources (one entity at a time): each entity is
// validated on its own, then all valid ones are written in one transaction.
// It returns one error (or nil) per change.
func (s *Server) alterQuotas(ctx context.Context, c *wire.Conn, changes []quotaChange, validateOnly bool) []error {
	errs := make([]error, len(changes))
	var paths []string
	var at []int
	for i, ch := range changes {
		if errs[i] = checkQuotaOps(ch.path, ch.ops); errs[i] == nil {
			paths = append(paths, ch.path)
			at = append(at, i)
		}
	}
	if len(paths) == 0 {
		return errs
	}
	before := make([]map[string]float64, len(paths))
	after := make([]map[string]float64, len(paths))
	entityErrs, err := s.Store.UpdateQuotas(ctx, paths, func(j int, cur map[string]float64) (map[string]float64, error) {
		next := map[string]float64{}
		for k, v := range cur {
			next[k] = v
		}
		for _, op := range changes[at[j]].ops {
			if op.remove {
				delete(next, op.key)
			} else {
				next[op.key] = op.value
			}
		}
		if err := s.Quotas.ValidateChanges(quota.Overrides{paths[j]: next}); err != nil {
			return nil, err
		}
		if err := s.checkQuotaPolicy(c, paths[j], changes[at[j]].ops, next); err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		before[j], after[j] = cur, next
		return next, nil
	})
	for j, i := range at {
		switch {
		case err != nil:
			errs[i] = err
		case errors.Is(entityErrs[j], errValidateOnly):
		case entityErrs[j] != nil:
			errs[i] = entityErrs[j]
		default:
			s.auditQuotaChange(c, paths[j], before[j], after[j])
		}
	}
	return errs
}

// checkQuotaOps validates one entity's ops before anything is written.
func checkQuotaOps(path string, ops []quotaOp) error {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.key] {
			return newError(kerr.InvalidRequest, fmt.Sprintf("Duplicate quota key %s in entity", op.key))
		}
		seen[op.key] = true
		value := op.value
		if op.remove {
			value = 1 // a removal names a key but carries no value to check
		}
		if err := quota.ValidateKey(path, op.key, value); err != nil {
			return err
		}
	}
	return nil
}

// auditQuotaChange logs each changed quota key once.
func (s *Server) auditQuotaChange(c *wire.Conn, path string, before, after map[string]float64) {
	for _, k := range dynconfig.ChangedKeys(before, after) {
		old, hadOld := before[k]
		cur, hasNew := after[k]
		s.Audit.Info("quota changed", "principal", c.Principal, "client", c.Remote.String(),
			"resource_type", "quota", "resource", path, "key", k,
			"old", dynconfig.OrNull(fmt.Sprint(old), hadOld), "new", dynconfig.OrNull(fmt.Sprint(cur), hasNew))
	}
}
