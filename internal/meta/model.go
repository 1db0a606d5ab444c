package meta

import (
	"encoding/base64"
	"fmt"

	"kbroker/internal/auth"
)

// TopicID is a topic's UUID, as Kafka gives every topic one.
type TopicID [16]byte

// String is Kafka's rendering of a Uuid: URL-safe base64 without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

func (id *TopicID) UnmarshalText(b []byte) error {
	raw, err := base64.RawURLEncoding.DecodeString(string(b))
	if err != nil || len(raw) != 16 {
		return fmt.Errorf("bad topic id %q", b)
	}
	copy(id[:], raw)
	return nil
}

// Topic is a topic's metadata.
type Topic struct {
	Name              string  `json:"name"`
	ID                TopicID `json:"id"`
	Partitions        int32   `json:"partitions"`
	ReplicationFactor int16   `json:"replication_factor"`
	// Replicas holds each partition's replicas as placed when it was
	// created, preferred leader first: the initial state of a partition
	// without a PartitionRecord (InitialPartition), and nothing more. Its
	// replicas, leader and ISR now are its PartitionRecord's
	// (Snapshot.Partition, Snapshot.Leader), which reassignments and
	// elections rewrite and this field never follows, as Kafka's
	// TopicRecord holds no assignment. A partition without an entry
	// (records written before placement existed) is led by whichever
	// broker reads the record.
	Replicas [][]int32 `json:"replicas,omitempty"`
}

// Snapshot is an immutable view of all metadata at one revision, read
// through its accessors (Topic, TopicByID, AllTopics, TopicConfig, ...).
// Never modify one, nor a map an accessor returns: the store builds a new
// snapshot for every change, sharing what the change did not touch.
type Snapshot struct {
	Rev       int64
	ClusterID string

	// The sub-images (image.go), one per kind of record.
	topics     topicsImage
	partitions partitionsImage // partition records by topic id (partitions.go)
	configs    configsImage
	quotas     map[string]map[string]float64         // by entity path (quotas.go)
	acls       map[string][]auth.ACL                 // by resource pattern key (acls.go)
	scram      map[string]map[string]auth.Credential // by user, then mechanism (scram.go)
	brokers    map[int32]*Broker                     // the live brokers (brokers.go)
}

func emptySnapshot() *Snapshot {
	return &Snapshot{
		quotas:  map[string]map[string]float64{},
		acls:    map[string][]auth.ACL{},
		scram:   map[string]map[string]auth.Credential{},
		brokers: map[int32]*Broker{},
	}
}

// with returns a copy of s with b applied, and what b changed. Only the
// sub-images b touches are new; the others are shared with s.
func (s *Snapshot) with(b Batch) (*Snapshot, *Delta, error) {
	d, err := decodeBatch(b)
	if err != nil {
		return nil, nil, err
	}
	return s.applyDelta(b.Rev, d), d, nil
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
