package dynconfig

import (
	"slices"
	"strings"

	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// Described is one config as DescribeConfigs reports it.
type Described struct {
	config.Entry
	Def       *config.Def // nil for keys outside the catalog
	ReadOnly  bool
	Sensitive bool
}

// ByName orders Described entries by key.
func ByName(a, b Described) int { return strings.Compare(a.Name, b.Name) }

// topicBase is TopicBase of one snapshot.
type topicBase struct {
	snap    *meta.Snapshot
	entries []Described
}

// TopicBase is every topic config resolved without topic overrides, sorted
// by name: what a topic without overrides reports. It depends only on the
// broker-level layers, so it is computed once per snapshot and shared by
// every topic described.
func (c *Configs) TopicBase(snap *meta.Snapshot) []Described {
	if b := c.topicBase.Load(); b != nil && b.snap == snap {
		return b.entries
	}
	out := ResolveTopicBase(c.Layers(snap, ""))
	c.topicBase.Store(&topicBase{snap: snap, entries: out})
	return out
}

// ResolveTopicBase resolves every topic config through the broker-level
// layers, sorted by name.
func ResolveTopicBase(layers config.Layers) []Described {
	var out []Described
	for _, d := range config.Topics.Defs() {
		out = append(out, Described{Entry: config.TopicBase(d, layers), Def: d, Sensitive: d.Sensitive()})
	}
	slices.SortFunc(out, ByName)
	return out
}

// Topic is every config of topic in snap, sorted by name.
func (c *Configs) Topic(snap *meta.Snapshot, topic string) []Described {
	base := c.TopicBase(snap)
	overrides := snap.TopicConfig(topic)
	out := make([]Described, len(base))
	for i, e := range base {
		out[i] = e
		if v, ok := overrides[e.Name]; ok {
			out[i].Entry = config.WithTopicOverride(e.Entry, v)
		}
	}
	// An internal key is described only by the topics that set it, as
	// Kafka's resolveEffectiveTopicConfigs does.
	internal := false
	for _, d := range config.Topics.InternalDefs() {
		if v, ok := overrides[d.Name]; ok {
			e := config.TopicBase(d, c.Layers(snap, ""))
			out = append(out, Described{Entry: config.WithTopicOverride(e, v), Def: d, Sensitive: d.Sensitive()})
			internal = true
		}
	}
	if internal {
		slices.SortFunc(out, ByName)
	}
	return out
}

// Broker is every config of broker id in snap, whose server.properties are
// static (this broker's own, or another's as it published them): each key
// of the catalog, the listener-scoped keys set anywhere, and the static
// keys no catalog knows (sensitive with a null value, as Kafka reports
// keys whose type it cannot tell).
func (c *Configs) Broker(snap *meta.Snapshot, id string, static config.Properties) []Described {
	layers := config.Layers{Broker: snap.BrokerConfig(id), ClusterDefault: snap.BrokerConfig(""), Static: static}
	var out []Described
	for _, d := range config.Brokers.Defs() {
		out = append(out, Described{Entry: config.ResolveBroker(d, layers), Def: d, Sensitive: d.Sensitive(), ReadOnly: d.Mode == config.ReadOnly})
	}
	out = append(out, listenerEntries(layers)...)
	for _, key := range static.Keys() {
		if config.Brokers.Lookup(key) != nil {
			continue
		}
		out = append(out, Described{Entry: config.Entry{Name: key, Source: config.SourceStaticBroker,
			Synonyms: []config.Entry{{Name: key, Source: config.SourceStaticBroker}}}, Sensitive: true, ReadOnly: true})
	}
	return out
}

// listenerEntries are the listener-scoped broker configs
// (listener.name.<listener>.<key>) that server.properties or a dynamic
// change of this broker sets, typed as their base key (so the PASSWORD
// ones are sensitive with null values).
func listenerEntries(layers config.Layers) []Described {
	var out []Described
	for _, k := range unionKeys(layers.Static, layers.Broker) {
		d := config.ListenerDef(k)
		if d == nil {
			continue
		}
		out = append(out, Described{Entry: config.ResolveBroker(d, layers), Def: d, Sensitive: d.Sensitive()})
	}
	return out
}

// ClusterDefaults are the keys set at the cluster-wide dynamic default,
// each with only that level as synonym.
func (c *Configs) ClusterDefaults(snap *meta.Snapshot) []Described {
	defaults := config.Layers{ClusterDefault: snap.BrokerConfig("")}
	var out []Described
	for key := range defaults.ClusterDefault {
		d := config.Brokers.Lookup(key)
		if d == nil {
			continue
		}
		e := config.ResolveBroker(d, defaults)
		e.Synonyms = slices.DeleteFunc(e.Synonyms, func(s config.Entry) bool { return s.Source != config.SourceDynamicDefaultBroker })
		out = append(out, Described{Entry: e, Def: d, Sensitive: d.Sensitive(), ReadOnly: d.Mode == config.ReadOnly})
	}
	return out
}
