package config

// Source says where an effective value came from. The numbers are Kafka's
// ConfigSource enum, so they go on the wire unchanged.
type Source int8

const (
	SourceUnknown              Source = 0
	SourceTopic                Source = 1 // DYNAMIC_TOPIC_CONFIG
	SourceDynamicBroker        Source = 2 // DYNAMIC_BROKER_CONFIG
	SourceDynamicDefaultBroker Source = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG
	SourceDefault              Source = 5 // DEFAULT_CONFIG
	SourceBrokerLogger         Source = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
	SourceGroup                Source = 8 // DYNAMIC_GROUP_CONFIG
)

// Layers are the places a config's value can come from, most specific
// first. Any layer may be nil.
type Layers struct {
	Topic          map[string]string // the topic's overrides
	Broker         map[string]string // dynamic configs of this broker
	ClusterDefault map[string]string // dynamic cluster-wide broker default
	Static         Properties        // server.properties
}

// Entry is one resolved value with where it came from. Synonyms lists every
// place that sets it, winner first, as DescribeConfigs reports them; their
// values are as written there (log.retention.hours in hours), while Value
// is in the key's own unit.
type Entry struct {
	Name     string
	Value    *string // nil for keys without a value
	Source   Source
	Synonyms []Entry
}

// brokerLevels lists the broker-side layers in precedence order.
func (l Layers) brokerLevels() []struct {
	values map[string]string
	source Source
} {
	return []struct {
		values map[string]string
		source Source
	}{
		{l.Broker, SourceDynamicBroker},
		{l.ClusterDefault, SourceDynamicDefaultBroker},
		{l.Static, SourceStaticBroker},
	}
}

// brokerSynonyms lists, as Kafka does, every place that sets one of names:
// for each level (per-broker dynamic, cluster default, static, catalog
// default), each name present there, in the order given.
func brokerSynonyms(names []string, l Layers) []Entry {
	var out []Entry
	for _, level := range l.brokerLevels() {
		for _, n := range names {
			if v, ok := level.values[n]; ok {
				out = append(out, Entry{Name: n, Value: &v, Source: level.source})
			}
		}
	}
	for _, n := range names {
		if d := Brokers.Lookup(n); d != nil && !d.NoDefault {
			v := d.Default
			out = append(out, Entry{Name: n, Value: &v, Source: SourceDefault})
		}
	}
	return out
}

// ResolveTopic finds the effective value of a topic config: the topic
// override, then the broker synonyms (all spellings, e.g. log.retention.ms,
// .minutes and .hours for retention.ms) by level, then the catalog default.
//
// Kafka hides synonyms spelled differently from the primary broker key
// (so a static log.retention.hours shows retention.ms as DEFAULT_CONFIG);
// kbroker reports them, so the source always says where the value came from.
func ResolveTopic(d *Def, l Layers) Entry {
	base := TopicBase(d, l)
	if v, ok := l.Topic[d.Name]; ok {
		return WithTopicOverride(base, v)
	}
	return base
}

// TopicBase resolves a topic config ignoring topic overrides: what every
// topic without an override of d gets. Describing many topics resolves it
// once and applies each topic's override with WithTopicOverride.
func TopicBase(d *Def, l Layers) Entry {
	names := make([]string, len(d.Synonyms))
	for i, s := range d.Synonyms {
		names[i] = s.Name
	}
	syns := brokerSynonyms(names, l)
	e := Entry{Name: d.Name, Source: SourceDefault, Synonyms: syns}
	if len(syns) == 0 {
		if !d.NoDefault {
			v := d.Default
			e.Value = &v
		}
		return e
	}
	first := syns[0]
	e.Source = first.Source
	v := *first.Value
	for _, s := range d.Synonyms {
		if s.Name == first.Name && s.Convert != nil {
			if c, err := s.Convert(v); err == nil {
				v = c
			}
		}
	}
	e.Value = &v
	return e
}

// WithTopicOverride is base with a topic override of value on top. base is
// not modified.
func WithTopicOverride(base Entry, value string) Entry {
	v := value
	top := Entry{Name: base.Name, Value: &v, Source: SourceTopic}
	syns := make([]Entry, 0, len(base.Synonyms)+1)
	syns = append(append(syns, top), base.Synonyms...)
	top.Synonyms = syns
	return top
}

// ResolveGroup finds the effective value of group config d for a group
// with the given overrides, as Kafka's DescribeConfigs reports it: the
// override (DYNAMIC_GROUP_CONFIG), then the key's broker synonym by level
// (static in server.properties, else Kafka's default), or, for a key
// without a broker synonym (share.auto.offset.reset), the group catalog's
// default under the key's own name.
func ResolveGroup(d *Def, overrides map[string]string, l Layers) Entry {
	names := make([]string, len(d.Synonyms))
	for i, s := range d.Synonyms {
		names[i] = s.Name
	}
	syns := brokerSynonyms(names, l)
	if len(syns) == 0 && !d.NoDefault {
		v := d.Default
		syns = []Entry{{Name: d.Name, Value: &v, Source: SourceDefault}}
	}
	if v, ok := overrides[d.Name]; ok {
		syns = append([]Entry{{Name: d.Name, Value: &v, Source: SourceGroup}}, syns...)
	}
	e := Entry{Name: d.Name, Source: SourceDefault, Synonyms: syns}
	if len(syns) > 0 {
		e.Value, e.Source = syns[0].Value, syns[0].Source
	}
	return e
}

// GroupValues is the effective value of every group config for a group
// with the given overrides.
func GroupValues(overrides map[string]string, l Layers) map[string]string {
	out := make(map[string]string, len(Groups.Defs()))
	for _, d := range Groups.Defs() {
		if e := ResolveGroup(d, overrides, l); e.Value != nil {
			out[d.Name] = *e.Value
		}
	}
	return out
}

// brokerSpellings are the keys that set the same broker setting in other
// units, highest precedence first (Kafka's brokerConfigSynonyms).
var brokerSpellings = [][]string{
	{"log.roll.ms", "log.roll.hours"},
	{"log.roll.jitter.ms", "log.roll.jitter.hours"},
	{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	{"node.id", "broker.id"},
}

// ResolveBroker finds the value of broker config d as Kafka reports it:
// every spelling of the setting by level, keeping only entries from the
// first one spelled like d (a log.retention.hours entry hides a
// log.retention.ms set elsewhere, since that is another key).
func ResolveBroker(d *Def, l Layers) Entry {
	names := []string{d.Name}
	for _, group := range brokerSpellings {
		for i, n := range group {
			if n == d.Name {
				names = group[i:]
			}
		}
	}
	syns := brokerSynonyms(names, l)
	for i, s := range syns {
		if s.Name == d.Name {
			syns = syns[i:]
			break
		}
		if i == len(syns)-1 {
			syns = nil
		}
	}
	e := Entry{Name: d.Name, Source: SourceDefault, Synonyms: syns}
	if len(syns) > 0 {
		e.Value, e.Source = syns[0].Value, syns[0].Source
	}
	return e
}

// TopicValue is the effective value of a topic config as a string.
func TopicValue(name string, l Layers) string {
	d := Topics.Lookup(name)
	if d == nil {
		return ""
	}
	if e := ResolveTopic(d, l); e.Value != nil {
		return *e.Value
	}
	return ""
}
