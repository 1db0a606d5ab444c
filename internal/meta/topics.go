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
	ErrTopicExists       = errors.New("topic already exists")
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrInvalidPartitions = errors.New("invalid partition count")
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

// NewTopic is a topic to create with its config overrides.
type NewTopic struct {
	Topic   Topic
	Configs map[string]string
}

// CreateTopic stores a new topic and its config overrides in one transaction.
func (s *Store) CreateTopic(ctx context.Context, t Topic, configs map[string]string) (*Topic, error) {
	created, errs, err := s.CreateTopics(ctx, []NewTopic{{Topic: t, Configs: configs}})
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		return nil, errs[0]
	}
	return created[0], nil
}

// CreateTopics stores several new topics, each with its config overrides
// in the same transaction, all in one transaction where the backend allows
// (bbolt: one durable commit however many there are; etcd: chunks under
// --max-txn-ops and --max-request-bytes, batch.go). A topic that already
// exists, or whose configs are too large for one etcd transaction
// (ErrTooLarge), gets its own error in errs and the others are still
// created. err is a store failure that created none; one after some
// chunks committed is in errs of the topics it left uncreated.
func (s *Store) CreateTopics(ctx context.Context, topics []NewTopic) (created []*Topic, errs []error, err error) {
	for i := range topics {
		if topics[i].Topic.ID == (TopicID{}) {
			topics[i].Topic.ID = NewTopicID()
		}
	}
	created, errs = make([]*Topic, len(topics)), make([]error, len(topics))
	// Per topic: one read (does it exist) and up to two writes.
	done, err := s.updateChunks(ctx, len(topics), 2, func(tx Tx, lo, hi int) error {
		for i := lo; i < hi; i++ {
			t := topics[i].Topic
			created[i], errs[i] = nil, nil // fn may run again after a conflict
			if _, ok := tx.Get(topicKey(t.Name)); ok {
				errs[i] = fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, t.Name)
				continue
			}
			putJSON(tx, topicKey(t.Name), t)
			if len(topics[i].Configs) > 0 {
				putJSON(tx, topicConfigKey(t.Name), topics[i].Configs)
			}
			created[i] = &t
		}
		return nil
	}, func(i int, err error) { created[i], errs[i] = nil, err })
	if err != nil && done == 0 {
		return nil, nil, err
	}
	for i := done; i < len(topics); i++ {
		created[i], errs[i] = nil, err
	}
	return created, errs, nil
}

// DeleteTopic removes a topic and its config overrides.
// Its partition records are removed after, in transactions of their own
// (partitions.go): the topic is gone once the first commits.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	var id TopicID
	err := s.Update(ctx, func(tx Tx) error {
		raw, ok := tx.Get(topicKey(name))
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		var t Topic
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		id = t.ID
		tx.Delete(topicKey(name))
		tx.Delete(topicConfigKey(name))
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.deletePartitionRecords(ctx, id); err != nil {
		s.log.Warn("deleting a deleted topic's partition records", "topic", name, "err", err)
	}
	return nil
}

// SetPartitionCount raises a topic's partition count (Kafka never lowers it).
func (s *Store) SetPartitionCount(ctx context.Context, name string, count int32) error {
	return s.AddPartitions(ctx, name, count, nil)
}

// AddPartitions raises a topic's partition count to count, placing the new
// partitions on replicas (one entry per new partition; nil leaves them
// unassigned), in the same transaction as the count.
func (s *Store) AddPartitions(ctx context.Context, name string, count int32, replicas [][]int32) error {
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
			return fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", ErrInvalidPartitions, t.Partitions, count)
		}
		if len(replicas) > 0 && int32(len(replicas)) != count-t.Partitions {
			return fmt.Errorf("%w: the topic's partition count changed concurrently (now %d)", ErrInvalidPartitions, t.Partitions)
		}
		if len(replicas) > 0 {
			for int32(len(t.Replicas)) < t.Partitions {
				t.Replicas = append(t.Replicas, nil) // an older, unassigned record
			}
			t.Replicas = append(t.Replicas[:t.Partitions], replicas...)
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
