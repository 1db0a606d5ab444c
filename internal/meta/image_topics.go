package meta

import (
	"encoding/json"
	"fmt"
	"iter"

	"github.com/benbjohnson/immutable"
)

// topicsImage is every topic, by name and by id. A partition's placement
// lives in its topic's value (Topic.Replicas), so a change to a topic
// replaces one Topic, copying that topic's partition slice and a path of
// trie nodes, and nothing of any other topic; a partition's replication
// state (leader, ISR, epochs) is a record of its own (partitions.go).
//
// A topic's config overrides live in the same entry as the topic, so a
// request that needs both (DescribeConfigs of every topic, say) finds them
// with one lookup, and the image has one trie of names, not two.
type topicsImage struct {
	byName *immutable.Map[string, topicEntry]
	byID   *immutable.Map[TopicID, *Topic]
	// topics and withConfigs count the entries that have a topic and
	// that have config overrides (an entry may hold overrides written
	// without a topic record, or a topic without overrides).
	topics, withConfigs int
}

// topicEntry is what the image holds under one name: nil parts are absent.
type topicEntry struct {
	topic   *Topic
	configs map[string]string
}

// TopicsDelta holds the topics a batch wrote, by name; nil: deleted.
type TopicsDelta map[string]*Topic

var topicsKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		if !hasPrefix(c.Key, prefixTopics) {
			return false, nil
		}
		name, ok := nameAfter(c.Key, prefixTopics)
		if !ok {
			return true, nil // not a topic record: ignored
		}
		var t *Topic
		if !c.Deleted {
			t = new(Topic)
			if err := json.Unmarshal(c.Value, t); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
			t.Name = name
		}
		setDelta(&d.Topics, name, t)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		// The topic config overrides too: they share the topics' entries.
		if len(d.Topics) > 0 || len(d.Configs.Topics) > 0 {
			next.topics = next.topics.with(d.Topics, d.Configs.Topics)
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.Topics, later.Topics) },
}

// with returns the image with a batch's topics and topic config overrides
// applied (nil values: deleted). Both parts go through here, in one pass,
// because they share the entries of byName.
func (im topicsImage) with(topics TopicsDelta, configs map[string]map[string]string) topicsImage {
	if len(topics) > 0 {
		im.byID = im.idsWith(topics)
	}
	set := func(e *topicEntry, name string) {
		if t, ok := topics[name]; ok {
			e.topic = t
		}
		if c, ok := configs[name]; ok {
			e.configs = c
		}
	}
	if im.byName == nil || im.byName.Len() == 0 {
		// A full load: a builder mutates in place instead of copying a
		// path of trie nodes per name.
		b := immutable.NewMapBuilder[string, topicEntry](stringHasher{})
		im.topics, im.withConfigs = 0, 0
		for name := range unionOfKeys(topics, configs) {
			var e topicEntry
			set(&e, name)
			if e.topic != nil || e.configs != nil {
				im.count(e)
				b.Set(name, e)
			}
		}
		im.byName = b.Map()
		return im
	}
	for name := range unionOfKeys(topics, configs) {
		e, _ := im.byName.Get(name)
		im.uncount(e)
		set(&e, name)
		im.count(e)
		if e.topic == nil && e.configs == nil {
			im.byName = im.byName.Delete(name)
		} else {
			im.byName = im.byName.Set(name, e)
		}
	}
	return im
}

func (im *topicsImage) count(e topicEntry)   { im.add(e, 1) }
func (im *topicsImage) uncount(e topicEntry) { im.add(e, -1) }

func (im *topicsImage) add(e topicEntry, n int) {
	if e.topic != nil {
		im.topics += n
	}
	if e.configs != nil {
		im.withConfigs += n
	}
}

// idsWith is byID with topics applied. The old ids are removed before the
// new ones are set, so a topic recreated under a new id leaves no stale
// entry, whatever the order.
func (im topicsImage) idsWith(topics TopicsDelta) *immutable.Map[TopicID, *Topic] {
	ids := make(map[TopicID]*Topic, len(topics))
	for name := range topics {
		if old := im.entry(name).topic; old != nil {
			ids[old.ID] = nil
		}
	}
	for _, t := range topics {
		if t != nil {
			ids[t.ID] = t
		}
	}
	return persistentWith(im.byID, topicIDHasher{}, ids, func(t *Topic) bool { return t == nil })
}

// unionOfKeys iterates over the keys of a and then those of b not in a.
func unionOfKeys[A, B any](a map[string]A, b map[string]B) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; dup {
				continue
			}
			if !yield(k) {
				return
			}
		}
	}
}

func (im topicsImage) entry(name string) topicEntry { return getFrom(im.byName, name) }

// Topic is the named topic; nil if there is none.
func (s *Snapshot) Topic(name string) *Topic { return s.topics.entry(name).topic }

// TopicWithConfig is the named topic (nil if there is none) and its config
// overrides (nil if it has none), found with one lookup. The map is
// shared: never modify it.
func (s *Snapshot) TopicWithConfig(name string) (*Topic, map[string]string) {
	e := s.topics.entry(name)
	return e.topic, e.configs
}

// TopicByID is the topic with the id; nil if there is none.
func (s *Snapshot) TopicByID(id TopicID) *Topic { return getFrom(s.topics.byID, id) }

// AllTopics iterates over every topic by name, in no particular order.
func (s *Snapshot) AllTopics() iter.Seq2[string, *Topic] {
	return func(yield func(string, *Topic) bool) {
		for name, e := range all(s.topics.byName) {
			if e.topic != nil && !yield(name, e.topic) {
				return
			}
		}
	}
}

// TopicNames iterates over the name of every topic, in no particular order.
func (s *Snapshot) TopicNames() iter.Seq[string] {
	return func(yield func(string) bool) {
		for name := range s.AllTopics() {
			if !yield(name) {
				return
			}
		}
	}
}

// TopicCount is the number of topics.
func (s *Snapshot) TopicCount() int { return s.topics.topics }
