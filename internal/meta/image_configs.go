package meta

import (
	"encoding/json"
	"fmt"
	"iter"

	"github.com/benbjohnson/immutable"
)

// configsImage holds the dynamic broker configs by broker id, "" being the
// cluster-wide default (a handful of entries, so a plain map copied on
// change), and the group config overrides by group id (a persistent map:
// there may be one set per group, and a group coordinator reads them on
// every heartbeat). Each topic's config overrides, of which there may be
// one set per topic, live in the topic's entry of the topics image.
type configsImage struct {
	brokers map[string]map[string]string
	groups  *immutable.Map[string, map[string]string]
}

// ConfigsDelta holds the config overrides a batch wrote, by topic, by
// broker id ("" the cluster default) and by group; nil: removed.
type ConfigsDelta struct {
	Topics  map[string]map[string]string
	Brokers map[string]map[string]string
	Groups  map[string]map[string]string
}

var configsKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		into, prefix := &d.Configs.Topics, prefixTopicConf
		switch {
		case hasPrefix(c.Key, prefixTopicConf):
		case hasPrefix(c.Key, prefixBrokerConf):
			into, prefix = &d.Configs.Brokers, prefixBrokerConf
		case hasPrefix(c.Key, prefixGroupConf):
			into, prefix = &d.Configs.Groups, prefixGroupConf
		default:
			return false, nil
		}
		name, ok := nameAfter(c.Key, prefix)
		if !ok {
			return true, nil
		}
		if prefix == prefixBrokerConf && name == DefaultEntity {
			name = ""
		}
		var conf map[string]string
		if !c.Deleted {
			if err := json.Unmarshal(c.Value, &conf); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
			if conf == nil {
				conf = map[string]string{} // a stored null is an empty set, not a removal
			}
		}
		setDelta(into, name, conf)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		// d.Configs.Topics is applied with the topics (topicsKind).
		if len(d.Configs.Brokers) > 0 {
			next.configs.brokers = cloneWith(next.configs.brokers, d.Configs.Brokers, func(m map[string]string) bool { return m == nil })
		}
		if len(d.Configs.Groups) > 0 {
			next.configs.groups = persistentWith(next.configs.groups, stringHasher{}, d.Configs.Groups, func(m map[string]string) bool { return m == nil })
		}
	},
	merge: func(d, later *Delta) {
		mergeInto(&d.Configs.Topics, later.Configs.Topics)
		mergeInto(&d.Configs.Brokers, later.Configs.Brokers)
		mergeInto(&d.Configs.Groups, later.Configs.Groups)
	},
}

// TopicConfig is the topic's config overrides; nil if it has none. The map
// is shared: never modify it.
func (s *Snapshot) TopicConfig(name string) map[string]string {
	return s.topics.entry(name).configs
}

// AllTopicConfigs iterates over the overrides of every topic that has
// some, in no particular order.
func (s *Snapshot) AllTopicConfigs() iter.Seq2[string, map[string]string] {
	return func(yield func(string, map[string]string) bool) {
		for name, e := range all(s.topics.byName) {
			if e.configs != nil && !yield(name, e.configs) {
				return
			}
		}
	}
}

// BrokerConfig is a broker's dynamic configs by id; "" is the cluster-wide
// default. The map is shared: never modify it.
func (s *Snapshot) BrokerConfig(id string) map[string]string { return s.configs.brokers[id] }

// TopicConfigCount is the number of topics that have config overrides.
func (s *Snapshot) TopicConfigCount() int { return s.topics.withConfigs }

// GroupConfig is a group's config overrides; nil if it has none (whether
// or not the group exists). The map is shared: never modify it.
func (s *Snapshot) GroupConfig(group string) map[string]string {
	return getFrom(s.configs.groups, group)
}

// AllGroupConfigs iterates over the overrides of every group that has
// some, in no particular order.
func (s *Snapshot) AllGroupConfigs() iter.Seq2[string, map[string]string] {
	return all(s.configs.groups)
}
