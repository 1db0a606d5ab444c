package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Config overrides changed with a compare-and-set: the caller reads the
// overrides and their version, does whatever slow checking it needs outside
// any transaction (the embedder's alter-config policy, reading key store
// files), then commits only if the overrides are still at that version. So
// the store's write transaction holds nothing but the compare and the write,
// and etcd re-runs nothing but that on a conflict.

// ConfigsVersion identifies one stored state of an entity's overrides: the
// stored value's bytes ("" when the entity has none). The same bytes mean
// the same overrides, so a change computed from them is still right even if
// the entity was changed and changed back in between.
type ConfigsVersion string

// ErrConfigsChanged means the overrides changed after they were read: the
// caller reads them again and starts over.
var ErrConfigsChanged = errors.New("meta: config overrides changed since they were read")

// ReadConfigs returns one entity's overrides (empty if none) and their
// version, read from the backend itself rather than from the snapshot, so
// that on a shared store it sees the other brokers' latest writes.
func (s *Store) ReadConfigs(ctx context.Context, kind ConfigKind, name string) (map[string]string, ConfigsVersion, error) {
	key := configKey(kind, name)
	var raw []byte
	var present bool
	if _, err := s.backend.Update(ctx, func(tx Tx) error {
		raw, present = tx.Get(key)
		return nil
	}); err != nil {
		return nil, "", err
	}
	cur := map[string]string{}
	if present {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return nil, "", fmt.Errorf("decoding %s: %w", key, err)
		}
	}
	return cur, ConfigsVersion(raw), nil
}

// CompareAndSetConfigs replaces one entity's overrides with next if they
// are still at version, and returns once this store's snapshot includes the
// change. It fails with ErrConfigsChanged if they are not; an empty next
// deletes them, one equal to the stored set writes nothing. Topic overrides
// can only be written for a topic that exists.
func (s *Store) CompareAndSetConfigs(ctx context.Context, kind ConfigKind, name string, version ConfigsVersion, next map[string]string) error {
	key := configKey(kind, name)
	return s.Update(ctx, func(tx Tx) error {
		if kind == TopicConfigs {
			if _, ok := tx.Get(topicKey(name)); !ok {
				return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
			}
		}
		raw, _ := tx.Get(key)
		if ConfigsVersion(raw) != version {
			return ErrConfigsChanged
		}
		cur := map[string]string{}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &cur); err != nil {
				return fmt.Errorf("decoding %s: %w", key, err)
			}
		}
		switch {
		case maps.Equal(cur, next):
		case len(next) == 0:
			tx.Delete(key)
		default:
			putJSON(tx, key, next)
		}
		return nil
	})
}
