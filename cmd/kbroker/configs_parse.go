package main

// Parsing of kafka-configs.sh's entity and config arguments
// (ConfigCommand.ConfigCommandOptions and parseConfigsToBeAdded).

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"kbroker/admin"
	"kbroker/internal/config"
)

// Entity types of kafka-configs.sh that kbroker configs handles.
const (
	typeTopics        = "topics"
	typeBrokers       = "brokers"
	typeBrokerLoggers = "broker-loggers"
	typeUsers         = "users"
	typeClients       = "clients"
	typeIPs           = "ips"
	typeGroups        = "groups"
)

var entityTypes = []string{typeTopics, typeClients, typeUsers, typeBrokers, typeBrokerLoggers, typeIPs, typeGroups}

// singular is the entity type as the tool's messages name it ("topic").
func singular(typ string) string { return strings.TrimSuffix(typ, "s") }

// entity is one --entity-type with its name; a nil name is the default
// entity (--entity-default), an absent one means "every entity".
type entity struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
	// named is false when no --entity-name/--entity-default went with it.
	named bool
}

func (e entity) isDefault() bool { return e.named && e.Name == nil }

func (e entity) nameOr(def string) string {
	if e.Name == nil {
		return def
	}
	return *e.Name
}

// entityArgs records --entity-type/--entity-name/--entity-default and the
// shorthand flags in command-line order; Kafka pairs the n-th name (or
// default) with the n-th type.
type entityArgs struct {
	types     []string
	names     []*string // nil element = --entity-default
	explicit  bool      // --entity-type/--entity-name/--entity-default used
	shorthand bool      // --topic, --user-defaults… used
}

func (a *entityArgs) register(fs flagSetLike) {
	fs.Func("entity-type", "entity `type`: topics, brokers, broker-loggers, groups, users, clients or ips (users and clients may both be given)", func(v string) error {
		a.explicit = true
		a.types = append(a.types, v)
		return nil
	})
	fs.Func("entity-name", "entity `name`: topic, broker id, group id, user principal, client-id or ip; pairs with the --entity-type in the same position", func(v string) error {
		a.explicit = true
		a.names = append(a.names, &v)
		return nil
	})
	fs.BoolFunc("entity-default", "the default entity (users, clients, brokers, ips) of the --entity-type in the same position", func(string) error {
		a.explicit = true
		a.names = append(a.names, nil)
		return nil
	})
	short := func(flagName, typ, usage string) {
		fs.Func(flagName, usage, func(v string) error {
			a.shorthand = true
			a.types, a.names = append(a.types, typ), append(a.names, &v)
			return nil
		})
	}
	short("topic", typeTopics, "shorthand for --entity-type topics --entity-name `name`")
	short("broker", typeBrokers, "shorthand for --entity-type brokers --entity-name `id`")
	short("broker-logger", typeBrokerLoggers, "shorthand for --entity-type broker-loggers --entity-name `id`")
	short("group", typeGroups, "shorthand for --entity-type groups --entity-name `group`")
	short("user", typeUsers, "shorthand for --entity-type users --entity-name `principal`")
	short("client", typeClients, "shorthand for --entity-type clients --entity-name `client-id`")
	short("ip", typeIPs, "shorthand for --entity-type ips --entity-name `ip`")
	shortDefault := func(flagName, typ string) {
		fs.BoolFunc(flagName, "shorthand for --entity-type "+typ+" --entity-default", func(string) error {
			a.shorthand = true
			a.types, a.names = append(a.types, typ), append(a.names, nil)
			return nil
		})
	}
	shortDefault("user-defaults", typeUsers)
	shortDefault("client-defaults", typeClients)
	shortDefault("broker-defaults", typeBrokers)
	shortDefault("ip-defaults", typeIPs)
}

// flagSetLike is the part of *flag.FlagSet entityArgs needs.
type flagSetLike interface {
	Func(name, usage string, fn func(string) error)
	BoolFunc(name, usage string, fn func(string) error)
}

// entities checks the arguments as ConfigCommand.checkArgs does and pairs
// types with names.
func (a *entityArgs) entities(alter bool) ([]entity, error) {
	if a.explicit && a.shorthand {
		return nil, usageError("--entity-type/--entity-name/--entity-default cannot be mixed with --topic, --user, --broker-defaults… shorthands")
	}
	if len(a.types) == 0 {
		return nil, usageError("at least one --entity-type (or a shorthand such as --topic) is required")
	}
	if len(a.names) > len(a.types) {
		return nil, usageError("more --entity-name/--entity-default than --entity-type")
	}
	var out []entity
	seen := map[string]bool{}
	for i, typ := range a.types {
		if !contains(entityTypes, typ) {
			return nil, usagef("--entity-type %q: want one of %s", typ, strings.Join(entityTypes, ", "))
		}
		if seen[typ] {
			return nil, usagef("--entity-type %s given twice", typ)
		}
		seen[typ] = true
		e := entity{Type: typ}
		if i < len(a.names) {
			e.Name, e.named = a.names[i], true
		}
		if err := checkEntity(e, alter); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) > 1 && !(len(out) == 2 && seen[typeUsers] && seen[typeClients]) {
		return nil, usageError("only users and clients may be given together (a (user, client-id) quota entity)")
	}
	return out, nil
}

func checkEntity(e entity, alter bool) error {
	defaultable := e.Type == typeUsers || e.Type == typeClients || e.Type == typeBrokers || e.Type == typeIPs
	if e.isDefault() && !defaultable {
		return usagef("--entity-default is not valid for %s", e.Type)
	}
	if alter && !e.named {
		if defaultable {
			return usagef("--alter of %s needs --entity-name or --entity-default", e.Type)
		}
		return usagef("--alter of %s needs --entity-name", e.Type)
	}
	if e.Name != nil && (e.Type == typeBrokers || e.Type == typeBrokerLoggers) {
		if _, err := strconv.ParseInt(*e.Name, 10, 32); err != nil {
			return usagef("the entity name for %s must be a valid integer broker id, but it is: %s", e.Type, *e.Name)
		}
	}
	if e.Name != nil && *e.Name == "" {
		return usagef("empty --entity-name for %s (use --entity-default for the default)", e.Type)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// configAdds is the ordered result of --add-config / --add-config-file.
type configAdds struct {
	keys   []string
	values map[string]string
}

func (c *configAdds) set(k, v string) {
	if c.values == nil {
		c.values = map[string]string{}
	}
	if _, ok := c.values[k]; !ok {
		c.keys = append(c.keys, k)
	}
	c.values[k] = v
}

// parseAddConfig splits 'k1=v1,k2=[a,b],k3=' as ConfigCommand does: commas
// and equals signs inside [...] do not split, spaces around '=' are
// dropped, and every '[' and ']' is then removed from values.
func parseAddConfig(s string, into *configAdds) error {
	for _, pair := range splitOutsideBrackets(s, ',') {
		kv := splitOutsideBrackets(pair, '=')
		if len(kv) != 2 {
			return usageError(`invalid entity config: all configs to be added must be in the format "key=val"`)
		}
		k := strings.TrimSpace(kv[0])
		// Kafka's tool lets "=v" through and the broker then refuses a
		// config without a name; say so here, before any request.
		if k == "" {
			return usageError("invalid entity config: empty config key")
		}
		if !validConfigKey(k) {
			return usagef("invalid config key %q (allowed: letters, digits, '.', '_' and '-')", k)
		}
		v := strings.NewReplacer("[", "", "]", "").Replace(kv[1])
		into.set(k, strings.TrimSpace(v))
	}
	return nil
}

// splitOutsideBrackets splits at sep where Kafka's lookahead
// (?=[^\]]*(?:\[|$)) holds: no ']' comes before the next '[' or the end.
func splitOutsideBrackets(s string, sep byte) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != sep {
			continue
		}
		rest := s[i+1:]
		close, open := strings.IndexByte(rest, ']'), strings.IndexByte(rest, '[')
		if close < 0 || (open >= 0 && open < close) {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	parts = append(parts, s[start:])
	if sep == '=' {
		for i := range parts { // \s*=\s*
			if i > 0 {
				parts[i] = strings.TrimLeft(parts[i], " \t")
			}
			if i < len(parts)-1 {
				parts[i] = strings.TrimRight(parts[i], " \t")
			}
		}
	}
	return parts
}

func validConfigKey(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// parseDeleteConfig splits 'k1,k2'.
func parseDeleteConfig(s string) []string {
	var keys []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// loadAddConfigFile reads --add-config-file: a Java properties file as in
// Kafka, or the JSON that "kbroker configs --describe --format json"
// prints (the round trip): the dynamic configs of the one entity in it, or
// of the entity matching target when it holds several.
func loadAddConfigFile(path string, target []entity, into *configAdds, warn func(string)) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--add-config-file: %w", err)
	}
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return addsFromJSON(b, target, into, warn)
	}
	props, err := config.ParseProperties(b)
	if err != nil {
		return fmt.Errorf("--add-config-file %s: %w", path, err)
	}
	for _, k := range props.Keys() {
		into.set(k, props[k])
	}
	return nil
}

func addsFromJSON(b []byte, target []entity, into *configAdds, warn func(string)) error {
	var doc []describedEntity
	if err := json.Unmarshal(b, &doc); err != nil {
		var one describedEntity
		if err2 := json.Unmarshal(b, &one); err2 != nil {
			return fmt.Errorf("--add-config-file: not the JSON of --describe --format json: %w", err)
		}
		doc = []describedEntity{one}
	}
	var src *describedEntity
	switch {
	case len(doc) == 1:
		src = &doc[0]
	default:
		for i := range doc {
			if sameEntity(doc[i].Entity, target) {
				src = &doc[i]
			}
		}
	}
	if src == nil {
		return fmt.Errorf("--add-config-file: the JSON describes %d entities and none is the one being altered", len(doc))
	}
	dynamic := dynamicSource(src.Entity)
	for _, e := range src.Configs {
		switch {
		case e.IsReadOnly:
			continue
		case dynamic != admin.SourceUnknown && e.Source != dynamic && e.Source != admin.SourceUnknown:
			continue // inherited (from --describe --all): not this entity's own
		case e.Value == nil:
			warn(fmt.Sprintf("skipping %s: the broker does not return its value (sensitive)", e.Name))
			continue
		}
		into.set(e.Name, *e.Value)
	}
	return nil
}

func sameEntity(a, b []entity) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || (a[i].Name == nil) != (b[i].Name == nil) || (a[i].Name != nil && *a[i].Name != *b[i].Name) {
			return false
		}
	}
	return true
}

// dynamicSource is the source of an entity's own overrides, the ones
// --describe prints without --all (ConfigCommand.getResourceConfig);
// unknown for broker loggers (unfiltered) and quota entities.
func dynamicSource(ents []entity) admin.ConfigSource {
	if len(ents) != 1 {
		return admin.SourceUnknown
	}
	switch ents[0].Type {
	case typeTopics:
		return admin.SourceDynamicTopicConfig
	case typeGroups:
		return admin.SourceDynamicGroupConfig
	case typeBrokers:
		if ents[0].Name == nil {
			return admin.SourceDynamicDefaultBrokerConfig
		}
		return admin.SourceDynamicBrokerConfig
	}
	return admin.SourceUnknown
}
