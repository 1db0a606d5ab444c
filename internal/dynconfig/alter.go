package dynconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/policy"
)

// The errors a refused change carries, mapped to Kafka's error codes at
// the API edge; the message is Kafka's.
var (
	ErrInvalidConfig   = errors.New("invalid config")            // INVALID_CONFIG
	ErrInvalidRequest  = errors.New("invalid config request")    // INVALID_REQUEST
	ErrPolicyViolation = errors.New("config change not allowed") // POLICY_VIOLATION
)

// refusal is a refused change: one of the errors above with Kafka's message.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func refuse(kind error, format string, args ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Op is one requested change of one key. AlterConfigs requests are a SET
// per key with Alteration.Replace.
type Op struct {
	Name  string
	Kind  kmsg.IncrementalAlterConfigOp // SET, DELETE, APPEND or SUBTRACT
	Value *string
}

// Requester is who asked for a change, for the audit log.
type Requester struct {
	Principal string
	Client    string // remote address
	Listener  string // the listener the request arrived on
}

// Alteration is a requested change to one stored config resource: a topic,
// a broker, (a broker named "") the cluster-wide default, or a group.
type Alteration struct {
	Resource policy.ConfigResource
	Ops      []Op
	// Replace: the ops are the resource's whole new override set (legacy
	// AlterConfigs); keys left out are removed.
	Replace      bool
	ValidateOnly bool
	By           Requester
}

// maxAttempts bounds how often Alter starts over because another writer
// changed the same resource between its read and its commit.
const maxAttempts = 10

// Alter validates a change, asks the policy, encrypts its passwords and
// stores it, all of a resource's keys or none. The overrides are read with
// their version, everything slow (the policy, the appliers' checks, which
// read key store files) runs outside the store's write transaction, and
// the commit compares the version read: when another writer changed the
// resource meanwhile, Alter starts over from the read. The caller has
// checked that the resource exists. Once stored, the change is audited and
// in effect (its appliers have run).
func (c *Configs) Alter(ctx context.Context, a Alteration) error {
	kind := meta.TopicConfigs
	switch a.Resource.Type {
	case policy.Broker:
		kind = meta.BrokerConfigs
	case policy.Group:
		kind = meta.GroupConfigs
	}
	for attempt := 1; ; attempt++ {
		cur, version, err := c.store.ReadConfigs(ctx, kind, a.Resource.Name)
		if err != nil {
			return err
		}
		next, err := c.validate(a, cur)
		if err != nil || a.ValidateOnly {
			return err
		}
		err = c.store.CompareAndSetConfigs(ctx, kind, a.Resource.Name, version, next)
		if errors.Is(err, meta.ErrConfigsChanged) {
			if attempt == maxAttempts {
				return fmt.Errorf("%w (%d attempts)", meta.ErrConflict, attempt)
			}
			continue
		}
		if err != nil {
			return err
		}
		c.auditChange(a, cur, next)
		if c.ownBroker(a.Resource) {
			c.setAgain(setAgainKeys(a.Ops, cur, next))
		}
		return nil
	}
}

func (c *Configs) ownBroker(r policy.ConfigResource) bool {
	return r.Type == policy.Broker && r.Name == c.nodeID
}

// setAgainKeys are the keys ops name whose stored value stays as it was.
func setAgainKeys(ops []Op, cur, next map[string]string) []string {
	changed := ChangedKeys(cur, next)
	var out []string
	for _, op := range ops {
		if !slices.Contains(changed, op.Name) {
			out = append(out, op.Name)
		}
	}
	return out
}

// validate computes the new override set from cur and checks it: every
// changed key against the catalog, the cross-key rules, the appliers'
// checks (this broker's configs), then the policy. It returns the set to
// store, passwords encrypted.
func (c *Configs) validate(a Alteration, cur map[string]string) (map[string]string, error) {
	catalog, word := catalogOf(a.Resource.Type)
	next, err := applyOps(cur, a.Ops, a.Replace, catalog)
	if err != nil {
		return nil, err
	}
	if a.Resource.Type == policy.Group {
		// Kafka's GroupConfig.validate checks every name before any value.
		for _, op := range a.Ops {
			if _, set := next[op.Name]; set && catalog.Lookup(op.Name) == nil {
				return nil, refuse(ErrInvalidConfig, "Unknown %s config name: %s", word, op.Name)
			}
		}
	}
	changed := map[string]*string{}
	for _, op := range a.Ops {
		v, ok := next[op.Name]
		if !ok {
			changed[op.Name] = nil
			continue
		}
		if old, had := cur[op.Name]; had && old == v && a.Resource.Type != policy.Broker {
			continue // Kafka leaves unchanged keys out of the policy's view
		}
		changed[op.Name] = &v
		d := catalog.Lookup(op.Name)
		if d == nil {
			return nil, refuse(ErrInvalidConfig, "Unknown %s config name: %s", word, op.Name)
		}
		if err := c.checkKey(a.Resource, d, op.Name, v); err != nil {
			return nil, err
		}
	}
	if a.Resource.Type == policy.Topic {
		err = checkCompactionLags(next)
	} else if a.Resource.Type == policy.Group {
		err = c.checkGroup(next)
	} else if c.ownBroker(a.Resource) {
		// As Kafka's reconfiguration validation does: a change its
		// appliers could not apply (a certificate that does not match its
		// key, an unreadable key store, a bad JAAS line) is refused.
		// Another broker's files are that broker's to check.
		named := make([]string, len(a.Ops))
		for i, op := range a.Ops {
			named[i] = op.Name
		}
		if err = c.check(named, cur, next); err != nil {
			err = refuse(ErrInvalidConfig, "%v", err)
		}
	}
	if err != nil {
		return nil, err
	}
	if c.policy != nil {
		if err := c.policy.ValidateAlterConfig(c.policyRequest(a, changed, next)); err != nil {
			return nil, refuse(ErrPolicyViolation, "%s", err.Error())
		}
	}
	if err := c.encryptPasswords(catalog, a.Ops, next); err != nil {
		return nil, err
	}
	return next, nil
}

// catalogOf is the catalog of a stored config resource type, and the word
// Kafka's messages name it by.
func catalogOf(t policy.ResourceType) (*config.Catalog, string) {
	switch t {
	case policy.Broker:
		return config.Brokers, "broker"
	case policy.Group:
		return config.Groups, "group"
	}
	return config.Topics, "topic"
}

// checkKey validates one key being set on r.
func (c *Configs) checkKey(r policy.ConfigResource, d *config.Def, key, value string) error {
	if r.Type == policy.Broker {
		switch {
		case d.Mode == config.ReadOnly:
			return refuse(ErrInvalidRequest, "Cannot update these configs dynamically: Set(%s)", key)
		case d.Mode == config.PerBroker && r.Name == "":
			return refuse(ErrInvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", key)
		}
	}
	if err := d.Validate(value); err != nil {
		return refuse(ErrInvalidConfig, "%s", err.Error())
	}
	return nil
}

// checkCompactionLags applies Kafka's cross-key rule on the merged set.
func checkCompactionLags(next map[string]string) error {
	minLag, okMin := next["min.compaction.lag.ms"]
	maxLag, okMax := next["max.compaction.lag.ms"]
	if !okMin || !okMax {
		return nil
	}
	lo, _ := strconv.ParseInt(minLag, 10, 64)
	hi, _ := strconv.ParseInt(maxLag, 10, 64)
	if lo > hi {
		return refuse(ErrInvalidConfig, "conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)
	}
	return nil
}

// applyOps computes the new override set. Null values, unknown operations
// and list operations on keys that are not lists are refused as Kafka does.
func applyOps(cur map[string]string, ops []Op, replace bool, catalog *config.Catalog) (map[string]string, error) {
	next := maps.Clone(cur)
	if replace {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Value == nil && op.Kind != kmsg.IncrementalAlterConfigOpDelete {
			return nil, refuse(ErrInvalidRequest, "Null value not supported for : %s", op.Name)
		}
		switch op.Kind {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d := catalog.Lookup(op.Name)
			if d == nil {
				return nil, refuse(ErrInvalidConfig, "Unknown config name: %s", op.Name)
			}
			if d.Type != config.TypeList {
				return nil, NotAList(op)
			}
			base, ok := next[op.Name]
			if !ok {
				base = d.Default
			}
			items := config.SplitList(base)
			for _, item := range config.SplitList(*op.Value) {
				has := slices.Contains(items, item)
				if op.Kind == kmsg.IncrementalAlterConfigOpAppend && !has {
					items = append(items, item)
				}
				if op.Kind == kmsg.IncrementalAlterConfigOpSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == item })
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, refuse(ErrInvalidRequest, "Unknown config operation %d for %s", op.Kind, op.Name)
		}
	}
	return next, nil
}

// NotAList refuses an APPEND or SUBTRACT of a key that is not a LIST, as
// Kafka words it.
func NotAList(op Op) error {
	verb := "SUBTRACT"
	if op.Kind == kmsg.IncrementalAlterConfigOpAppend {
		verb = "APPEND"
	}
	return refuse(ErrInvalidConfig, "Can't %s to key %s because its type is not LIST.", verb, op.Name)
}

// encryptPasswords replaces every PASSWORD value that ops set in next with
// its encrypted form (auth.PasswordEncoder: AES-GCM, Kafka's at-rest
// format). Without password.encoder.secret they cannot be set, as in
// Kafka.
func (c *Configs) encryptPasswords(catalog *config.Catalog, ops []Op, next map[string]string) error {
	for _, op := range ops {
		d := catalog.Lookup(op.Name)
		v, set := next[op.Name]
		if d == nil || !d.Sensitive() || !set || op.Value == nil {
			continue
		}
		if c.passwords == nil {
			return refuse(ErrInvalidConfig, "Cannot set the password config %s dynamically: password.encoder.secret is not configured", op.Name)
		}
		enc, err := c.passwords.Encode(v)
		if err != nil {
			return refuse(ErrInvalidConfig, "Cannot encode the password config %s", op.Name)
		}
		next[op.Name] = enc
	}
	return nil
}
