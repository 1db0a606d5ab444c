package meta

import (
	"encoding/json"
	"fmt"
	"iter"

	"github.com/benbjohnson/immutable"
)

// topicsImage is every topic, by name and by id. A partition's state lives
// in its topic's value (Topic.Replicas, and later its ISR), so a change to
// one partition replaces one Topic, copying that topic's partition slice
// and a path of trie nodes, and nothing of any other topic.
type topicsImage struct {
	byName *immutable.Map[string, *Topic]
	byID   *immutable.Map[TopicID, *Topic]
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
		if len(d.Topics) > 0 {
			next.topics = next.topics.with(d.Topics)
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.Topics, later.Topics) },
}

func (im topicsImage) with(d TopicsDelta) topicsImage {
	// The old ids are removed before the new ones are set, so a topic
	// recreated under a new id leaves no stale entry, whatever the order.
	ids := make(map[TopicID]*Topic, len(d))
	for name := range d {
		if old := getFrom(im.byName, name); old != nil {
			ids[old.ID] = nil
		}
	}
	for _, t := range d {
		if t != nil {
			ids[t.ID] = t
		}
	}
	isNil := func(t *Topic) bool { return t == nil }
	return topicsImage{
		byName: persistentWith(im.byName, stringHasher{}, d, isNil),
		byID:   persistentWith(im.byID, topicIDHasher{}, ids, isNil),
	}
}

// Topic is the named topic; nil if there is none.
func (s *Snapshot) Topic(name string) *Topic { return getFrom(s.topics.byName, name) }

// TopicByID is the topic with the id; nil if there is none.
func (s *Snapshot) TopicByID(id TopicID) *Topic { return getFrom(s.topics.byID, id) }

// AllTopics iterates over every topic by name, in no particular order.
func (s *Snapshot) AllTopics() iter.Seq2[string, *Topic] { return all(s.topics.byName) }

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
func (s *Snapshot) TopicCount() int { return lenOf(s.topics.byName) }
