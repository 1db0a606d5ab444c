package api

// The USER (7) and CLIENT (6) config resources, as the seed proposes:
// quotas read and written through DescribeConfigs / AlterConfigs /
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
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

// Config resource types of the seed (KIP-133's USER and CLIENT).
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
func (q quotaConfigResource) entity(name string) (quotaEntity, error) {
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
	var e quotaEntity
	var err error
	if !q.user {
		e.hasClient = true
		e.client, err = part(name)
		return e, err
	}
	e.hasUser = true
	userPart, clientPart, pair := strings.Cut(name, "/clients/")
	if e.user, err = part(userPart); err != nil {
		return e, err
	}
	if pair {
		e.hasClient = true
		e.client, err = part(clientPart)
	}
	return e, err
}

func (q quotaConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]configEntry, error) {
	e, err := q.entity(name)
	if err != nil {
		return nil, err
	}
	// A default part stands for a name with no override of its own.
	user, client := "", ""
	if e.hasUser {
		user = "<default>"
		if e.user != nil {
			user = *e.user
		}
	}
	if e.hasClient {
		client = "<default>"
		if e.client != nil {
			client = *e.client
		}
	}
	own := snap.QuotaOverride(e.path())
	var out []configEntry
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
		out = append(out, configEntry{Entry: entry, def: d})
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

func (q quotaConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []configOp, replace, validateOnly bool) error {
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
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.value == nil {
				return newError(kerr.InvalidRequest, "Null value not supported for : "+op.name)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(*op.value), 64)
			if err != nil {
				return newError(kerr.InvalidConfig, fmt.Sprintf("Invalid value %s for configuration %s: Not a number", *op.value, op.name))
			}
			qop = quotaOp{key: op.name, value: v}
		case kmsg.IncrementalAlterConfigOpDelete:
			qop = quotaOp{key: op.name, remove: true}
		default:
			return newError(kerr.InvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", opVerb(op.op), op.name))
		}
		qops = replaceQuotaOp(qops, qop)
	}
	return s.alterQuotas(ctx, c, []quotaChange{{path: e.path(), ops: qops}}, validateOnly)[0]
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
