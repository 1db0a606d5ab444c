package meta

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
)

// Errors of the typed operations; the API layer maps them to Kafka codes.
var (
	ErrTopicExists     = errors.New("topic already exists")
	ErrUnknownTopic    = errors.New("unknown topic")
	ErrInvalidPartions = errors.New("invalid partition count")
)

// NewTopicID returns a random topic id that is neither all zeros nor the
// reserved metadata topic id, as Kafka's Uuid.randomUuid does.
func NewTopicID() TopicID {
	for {
		var id TopicID
		rand.Read(id[:])
		if id != (TopicID{}) && id != (TopicID{15: 1}) {
			return id
		}
	}
}

// EnsureClusterID returns the cluster id, writing a new random one if the
// store has none yet.
func (s *Store) EnsureClusterID(ctx context.Context) (string, error) {
	if id := s.Snapshot().ClusterID; id != "" {
		return id, nil
	}
	err := s.Update(ctx, func(tx Tx) error {
		if _, ok := tx.Get(keyClusterID); ok {
			return nil
		}
		tx.Put(keyClusterID, []byte(NewTopicID().String()))
		return nil
	})
	return s.Snapshot().ClusterID, err
}

// CreateTopic stores a new topic and its config overrides in one transaction.
func (s *Store) CreateTopic(ctx context.Context, t Topic, configs map[string]string) (*Topic, error) {
	if t.ID == (TopicID{}) {
		t.ID = NewTopicID()
	}
	err := s.Update(ctx, func(tx Tx) error {
		if _, ok := tx.Get(topicKey(t.Name)); ok {
			return fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, t.Name)
		}
		putJSON(tx, topicKey(t.Name), t)
		if len(configs) > 0 {
			putJSON(tx, topicConfigKey(t.Name), configs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTopic removes a topic and its config overrides.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	return s.Update(ctx, func(tx Tx) error {
		if _, ok := tx.Get(topicKey(name)); !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		tx.Delete(topicKey(name))
		tx.Delete(topicConfigKey(name))
		return nil
	})
}

// SetPartitionCount raises a topic's partition count (Kafka never lowers it).
func (s *Store) SetPartitionCount(ctx context.Context, name string, count int32) error {
	return s.Update(ctx, func(tx Tx) error {
		raw, ok := tx.Get(topicKey(name))
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		var t Topic
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		if count <= t.Partitions {
			return fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", ErrInvalidPartions, t.Partitions, count)
		}
		t.Partitions = count
		putJSON(tx, topicKey(name), t)
		return nil
	})
}

func putJSON(tx Tx, key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("meta: encoding %s: %v", key, err)) // only our own types are encoded
	}
	tx.Put(key, b)
}
