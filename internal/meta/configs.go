package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
)

// ConfigKind is the kind of entity a set of config overrides belongs to; its
// value is the path segment under config/.
type ConfigKind string

const (
	TopicConfigs  ConfigKind = "topics"
	BrokerConfigs ConfigKind = "brokers"
	// GroupConfigs are a group's overrides (Kafka 4's GROUP config
	// resource). They may exist for a group that does not (yet), as in
	// Kafka, so nothing checks the group.
	GroupConfigs ConfigKind = "groups"
)

func configKey(kind ConfigKind, name string) string {
	if kind == BrokerConfigs {
		return brokerConfigKey(name)
	}
	return "config/" + string(kind) + "/" + escape(name)
}

// UpdateConfigs changes one entity's overrides in one transaction. change
// gets a copy of the current overrides (empty if none) and returns the new
// set; an error aborts without writing. On a backend that retries
// conflicting transactions, change may run more than once. Topic overrides
// can only be written for a topic that exists.
func (s *Store) UpdateConfigs(ctx context.Context, kind ConfigKind, name string, change func(map[string]string) (map[string]string, error)) error {
	key := configKey(kind, name)
	return s.Update(ctx, func(tx Tx) error {
		if kind == TopicConfigs {
			if _, ok := tx.Get(topicKey(name)); !ok {
				return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
			}
		}
		return updateMap(tx, key, change)
	})
}

// updateMap rewrites the JSON object stored at key: change gets a copy of
// the current entries (empty if none) and returns the new ones; an empty
// result deletes the key, an unchanged one writes nothing.
func updateMap[V comparable](tx Tx, key string, change func(map[string]V) (map[string]V, error)) error {
	cur := map[string]V{}
	if raw, ok := tx.Get(key); ok {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return fmt.Errorf("decoding %s: %w", key, err)
		}
	}
	next, err := change(maps.Clone(cur))
	if err != nil {
		return err
	}
	switch {
	case maps.Equal(cur, next):
	case len(next) == 0:
		tx.Delete(key)
	default:
		putJSON(tx, key, next)
	}
	return nil
}
