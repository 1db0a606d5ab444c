// Package config holds kbroker's catalog of configuration keys (topic and
// broker, with Kafka's names, types, defaults, validators, broker synonyms
// and the applier of each dynamic key), reads server.properties, and
// resolves effective values with the source each value came from. It is a
// leaf: what a value does to a running broker is internal/dynconfig's and
// its appliers'.
package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a config's value type. The numbers are Kafka's ConfigType enum
// (DescribeConfigs v3+), so they go on the wire unchanged.
type Type int8

const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	case TypeClass:
		return "CLASS"
	case TypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Mode says whether and where a broker config may change at runtime, with
// the vocabulary of Kafka's "Dynamic Update Mode" column.
type Mode int8

const (
	ReadOnly    Mode = iota // only in server.properties
	PerBroker               // dynamic, only for one broker id
	ClusterWide             // dynamic, per broker or at the cluster default
)

// Applier names what puts a dynamic key's new value into effect on a
// running broker. internal/dynconfig keeps the registry that maps each name
// to the code (registered by the package that owns it) and wakes only the
// appliers of the keys a change touched.
type Applier string

const (
	// ApplyLogs: the settings of the open partition logs (every topic
	// config, and the broker keys that supply their defaults).
	ApplyLogs Applier = "logs"
	// ApplyListenerSecurity: TLS key and trust stores and SASL settings
	// of each listener, for the connections accepted from then on.
	ApplyListenerSecurity Applier = "listener-security"
	// ApplyConnectionLimits: connection counts and creation rates.
	ApplyConnectionLimits Applier = "connection-limits"
	// ApplyNotNeeded: the dynamic Kafka keys kbroker accepts but does not
	// need (kafkaOnlyDefs). A change is validated, stored, described and
	// audited like any other and has no effect; naming it keeps "every
	// dynamic key has an applier" free of silent gaps.
	ApplyNotNeeded Applier = "accepted-not-needed"
	// ApplyReplicationQuotas: the replication throttles (Kafka's
	// ReplicationQuotaManager): the leader and follower byte rates and
	// the topics' throttled replica lists.
	ApplyReplicationQuotas Applier = "replication-quotas"
	// ApplyPolicies: the policy rule set stored in the metadata store
	// (kbroker.policy.rules), compiled and put in effect on every broker.
	ApplyPolicies Applier = "policies"
)

// Synonym is a broker key that supplies a topic config's default. Convert
// turns the broker key's value into the topic key's unit (hours to ms...).
type Synonym struct {
	Name    string
	Convert func(string) (string, error)
}

// Def describes one config key.
type Def struct {
	Name string
	Type Type
	// Default is the value when nothing sets it; NoDefault marks keys that
	// have none (Kafka reports them with a null value).
	Default   string
	NoDefault bool
	Doc       string
	// Check validates a value that already parsed as Type.
	Check    func(string) error
	Synonyms []Synonym // topic configs: broker keys, highest precedence first
	Mode     Mode      // broker configs
	// AppliedBy names the applier of a key that can change at runtime:
	// every topic config, and every broker config whose Mode is not
	// ReadOnly.
	AppliedBy Applier
	// Internal keys are Kafka's defineInternal ones: accepted and
	// validated, but left out of Defs (and so of DescribeConfigs) unless
	// a resource sets them.
	Internal bool
}

// Sensitive reports whether values of this key must never be returned or
// logged (Kafka treats PASSWORD-typed keys so).
func (d *Def) Sensitive() bool { return d.Type == TypePassword }

// Validate checks that value parses as the key's type and passes its rule.
// The error names the key, the value and the rule, as Kafka's
// ConfigException does.
func (d *Def) Validate(value string) error {
	if err := checkType(d.Type, value); err != nil {
		return fmt.Errorf("Invalid value %s for configuration %s: %v", value, d.Name, err)
	}
	if d.Check != nil {
		if err := d.Check(value); err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: %v", value, d.Name, err)
		}
	}
	return nil
}

func checkType(t Type, v string) error {
	s := strings.TrimSpace(v)
	switch t {
	case TypeBoolean:
		if !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			return fmt.Errorf("Expected value to be either true or false")
		}
	case TypeInt:
		if _, err := strconv.ParseInt(s, 10, 32); err != nil {
			return fmt.Errorf("Not a number of type INT")
		}
	case TypeShort:
		if _, err := strconv.ParseInt(s, 10, 16); err != nil {
			return fmt.Errorf("Not a number of type SHORT")
		}
	case TypeLong:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("Not a number of type LONG")
		}
	case TypeDouble:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return fmt.Errorf("Not a number of type DOUBLE")
		}
	}
	return nil
}

// Catalog is a set of config definitions looked up by name.
type Catalog struct {
	defs     []*Def
	internal []*Def
	byName   map[string]*Def
}

func newCatalog(defs []*Def) *Catalog {
	c := &Catalog{byName: make(map[string]*Def, len(defs))}
	for _, d := range defs {
		if _, dup := c.byName[d.Name]; dup {
			panic("config: duplicate definition of " + d.Name)
		}
		c.byName[d.Name] = d
		if d.Internal {
			c.internal = append(c.internal, d)
		} else {
			c.defs = append(c.defs, d)
		}
	}
	return c
}

// Lookup returns the definition of name, or nil if the key is unknown.
// The broker catalog also knows listener-scoped keys (ListenerDef).
func (c *Catalog) Lookup(name string) *Def {
	if d := c.byName[name]; d != nil || c != Brokers {
		return d
	}
	return ListenerDef(name)
}

// Defs returns every definition in catalog order, internal ones aside.
func (c *Catalog) Defs() []*Def { return c.defs }

// InternalDefs returns the internal definitions (Def.Internal).
func (c *Catalog) InternalDefs() []*Def { return c.internal }

// Value checkers shared by the catalogs. Messages follow Kafka's validators.

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if n < min {
			return fmt.Errorf("Value must be at least %d", min)
		}
		return nil
	}
}

func between(min, max int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if n < min || n > max {
			return fmt.Errorf("Value must be in the range [%d, %d]", min, max)
		}
		return nil
	}
}

func betweenFloat(min, max float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if f < min || f > max || math.IsNaN(f) {
			return fmt.Errorf("Value must be in the range [%g, %g]", min, max)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.TrimSpace(v) == a {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
	}
}

func subsetOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, item := range SplitList(v) {
			if oneOf(allowed...)(item) != nil {
				return fmt.Errorf("Invalid value %s: must be a subset of [%s]", item, strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

// SplitList splits a LIST value on commas, trimming blanks, as Kafka does.
func SplitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// scale returns a converter that multiplies an integer value, for synonyms
// in coarser units (log.retention.hours for retention.ms).
func scale(factor int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n*factor, 10), nil
	}
}

// retentionMillis converts a broker retention key in coarser units to
// retention.ms. Any negative broker retention means "keep forever", which
// the topic config spells -1: Kafka's logRetentionTimeMillis maps every
// negative value so, and retention.ms itself accepts nothing below -1.
func retentionMillis(factor int64) func(string) (string, error) {
	toMillis := scale(factor)
	return func(v string) (string, error) {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n < 0 {
			return "-1", nil
		}
		return toMillis(v)
	}
}

const maxLong = "9223372036854775807"
