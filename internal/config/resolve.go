package config

import (
	"strconv"
	"strings"

	"kbroker/internal/storage"
)

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
)

// Layers are the places a topic config's value can come from, most specific
// first. Any layer may be nil.
type Layers struct {
	Topic          map[string]string // the topic's overrides
	Broker         map[string]string // dynamic configs of this broker
	ClusterDefault map[string]string // dynamic cluster-wide broker default
	Static         Properties        // server.properties
}

// Entry is one resolved value with where it came from. Synonyms lists every
// place that sets it, winner first, as DescribeConfigs reports them.
type Entry struct {
	Name     string
	Value    *string // nil for keys without a value (no default)
	Source   Source
	Synonyms []Entry
}

// ResolveTopic finds the effective value of a topic config: the topic
// override, then each broker synonym in precedence order (per-broker dynamic,
// cluster default, static), then the catalog default.
func ResolveTopic(d *Def, l Layers) Entry {
	var syns []Entry
	add := func(name, value string, src Source, convert func(string) (string, error)) {
		if convert != nil {
			if c, err := convert(value); err == nil {
				value = c
			}
		}
		v := value
		syns = append(syns, Entry{Name: name, Value: &v, Source: src})
	}
	if v, ok := l.Topic[d.Name]; ok {
		add(d.Name, v, SourceTopic, nil)
	}
	for _, s := range d.Synonyms {
		if v, ok := l.Broker[s.Name]; ok {
			add(s.Name, v, SourceDynamicBroker, s.Convert)
		}
		if v, ok := l.ClusterDefault[s.Name]; ok {
			add(s.Name, v, SourceDynamicDefaultBroker, s.Convert)
		}
		if v, ok := l.Static[s.Name]; ok {
			add(s.Name, v, SourceStaticBroker, s.Convert)
		}
	}
	if !d.NoDefault {
		add(d.Name, d.Default, SourceDefault, nil)
	}
	e := Entry{Name: d.Name, Source: SourceDefault}
	if len(syns) > 0 {
		e.Value, e.Source = syns[0].Value, syns[0].Source
	}
	e.Synonyms = syns
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

// StorageConfig turns a topic's effective configs into its partition logs'
// settings.
func StorageConfig(l Layers) storage.Config {
	long := func(name string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(TopicValue(name, l)), 10, 64)
		return n
	}
	c := storage.DefaultConfig()
	c.SegmentBytes = long("segment.bytes")
	c.SegmentMs = long("segment.ms")
	c.RetentionMs = long("retention.ms")
	c.RetentionBytes = long("retention.bytes")
	c.IndexIntervalBytes = int32(long("index.interval.bytes"))
	c.SegmentIndexBytes = int32(long("segment.index.bytes"))
	c.MaxMessageBytes = int32(long("max.message.bytes"))
	c.TimestampBeforeMaxMs = long("message.timestamp.before.max.ms")
	c.TimestampAfterMaxMs = long("message.timestamp.after.max.ms")
	if TopicValue("message.timestamp.type", l) == "LogAppendTime" {
		c.TimestampType = storage.LogAppendTime
	} else {
		c.TimestampType = storage.CreateTime
	}
	return c
}
