package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
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
// that on a shared store it sees the other brokers' latest writes. The
// overrides of a topic that does not exist are ErrUnknownTopic.
func (s *Store) ReadConfigs(ctx context.Context, kind ConfigKind, name string) (map[string]string, ConfigsVersion, error) {
	key := configKey(kind, name)
	var raw []byte
	var present bool
	read := func(tx Tx) error {
		if err := topicExists(tx, kind, name); err != nil {
			return err
		}
		raw, present = tx.Get(key)
		return nil
	}
	var err error
	if r, ok := s.backend.(readOnlyBackend); ok {
		err = r.view(ctx, read)
	} else {
		_, err = s.backend.Update(ctx, read) // writes nothing: etcd commits nothing
	}
	if err != nil {
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
		if err := topicExists(tx, kind, name); err != nil {
			return err
		}
		if raw, _ := tx.Get(key); ConfigsVersion(raw) != version {
			return ErrConfigsChanged
		}
		return updateMap(tx, key, func(map[string]string) (map[string]string, error) { return next, nil })
	})
}

// topicExists refuses the overrides of a topic that does not exist.
func topicExists(tx Tx, kind ConfigKind, name string) error {
	if kind != TopicConfigs {
		return nil
	}
	if _, ok := tx.Get(topicKey(name)); !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return nil
}

// readOnlyBackend runs a transaction that only reads without the cost of a
// write: bbolt commits, and syncs to disk, even a write transaction that
// wrote nothing.
type readOnlyBackend interface {
	view(ctx context.Context, fn func(Tx) error) error
}

func (b *Bolt) view(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.View(func(tx *bolt.Tx) error {
		return fn(&boltTx{bucket: tx.Bucket(boltKeys)})
	})
}
