package meta

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"

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
	// Replicas holds each partition's replicas, leader first (one replica
	// today). A partition without an entry (records written before
	// placement existed) is led by whichever broker reads the record.
	Replicas [][]int32 `json:"replicas,omitempty"`
}

// Leader is the leader of partition p; self for an unassigned partition.
func (t *Topic) Leader(p, self int32) int32 {
	if int(p) < len(t.Replicas) && len(t.Replicas[p]) > 0 {
		return t.Replicas[p][0]
	}
	return self
}

// Snapshot is an immutable view of all metadata at one revision. Never
// modify one: the store builds a new snapshot for every change.
type Snapshot struct {
	Rev       int64
	ClusterID string
	Topics    map[string]*Topic
	TopicIDs  map[TopicID]*Topic
	// TopicConfigs holds each topic's overrides (only topics that have some).
	TopicConfigs map[string]map[string]string
	// BrokerConfigs holds dynamic broker configs by broker id; "" is the
	// cluster-wide default.
	BrokerConfigs map[string]map[string]string
	// Quotas holds client quota overrides by entity path (e.g.
	// "users/alice/clients/c1", "clients/<default>", "ips/10.0.0.1").
	Quotas map[string]map[string]float64
	// ACLs holds every ACL by the key of its resource pattern (acls.go).
	ACLs map[string][]auth.ACL
	// Scram holds SCRAM credentials by user, then mechanism (scram.go).
	Scram map[string]map[string]auth.Credential
	// Brokers holds the live brokers by id (brokers.go).
	Brokers map[int32]*Broker
}

func emptySnapshot() *Snapshot {
	return &Snapshot{
		Topics:        map[string]*Topic{},
		TopicIDs:      map[TopicID]*Topic{},
		TopicConfigs:  map[string]map[string]string{},
		BrokerConfigs: map[string]map[string]string{},
		Quotas:        map[string]map[string]float64{},
		ACLs:          map[string][]auth.ACL{},
		Scram:         map[string]map[string]auth.Credential{},
		Brokers:       map[int32]*Broker{},
	}
}

// with returns a copy of s with the changes applied. Only the maps the
// changes touch are copied.
func (s *Snapshot) with(b Batch) (*Snapshot, error) {
	n := *s
	n.Rev = b.Rev
	copied := map[string]bool{}
	cow := func(name string) bool {
		if copied[name] {
			return false
		}
		copied[name] = true
		return true
	}
	for _, c := range b.Changes {
		switch {
		case c.Key == keyClusterID:
			n.ClusterID = string(c.Value)
		case hasPrefix(c.Key, prefixTopics):
			name, ok := nameAfter(c.Key, prefixTopics)
			if !ok {
				continue
			}
			if cow("topics") {
				n.Topics = maps.Clone(n.Topics)
				n.TopicIDs = maps.Clone(n.TopicIDs)
			}
			if old := n.Topics[name]; old != nil {
				delete(n.TopicIDs, old.ID)
				delete(n.Topics, name)
			}
			if !c.Deleted {
				t := new(Topic)
				if err := json.Unmarshal(c.Value, t); err != nil {
					return nil, fmt.Errorf("decoding %s: %w", c.Key, err)
				}
				t.Name = name
				n.Topics[name] = t
				n.TopicIDs[t.ID] = t
			}
		case hasPrefix(c.Key, prefixTopicConf):
			if cow("topicconf") {
				n.TopicConfigs = maps.Clone(n.TopicConfigs)
			}
			if err := applyConfig(n.TopicConfigs, c, prefixTopicConf, ""); err != nil {
				return nil, err
			}
		case isQuotaKey(c.Key):
			path, _ := quotaPathOf(c.Key)
			if cow("quotas") {
				n.Quotas = maps.Clone(n.Quotas)
			}
			if err := applyQuota(n.Quotas, c, path); err != nil {
				return nil, err
			}
		case hasPrefix(c.Key, prefixACLs):
			if cow("acls") {
				n.ACLs = maps.Clone(n.ACLs)
			}
			if err := applyACLs(n.ACLs, c); err != nil {
				return nil, err
			}
		case hasPrefix(c.Key, prefixScram):
			if cow("scram") {
				n.Scram = maps.Clone(n.Scram)
			}
			if err := applyScram(n.Scram, c); err != nil {
				return nil, err
			}
		case hasPrefix(c.Key, prefixBrokers):
			if cow("brokers") {
				n.Brokers = maps.Clone(n.Brokers)
			}
			if err := applyBroker(n.Brokers, c); err != nil {
				return nil, err
			}
		case hasPrefix(c.Key, prefixBrokerConf):
			if cow("brokerconf") {
				n.BrokerConfigs = maps.Clone(n.BrokerConfigs)
			}
			if err := applyConfig(n.BrokerConfigs, c, prefixBrokerConf, DefaultEntity); err != nil {
				return nil, err
			}
		}
	}
	return &n, nil
}

// applyConfig sets or removes one entity's config map. defaultName, if set,
// is the stored name that maps to "" (the default entity).
func applyConfig(m map[string]map[string]string, c Change, prefix, defaultName string) error {
	name, ok := nameAfter(c.Key, prefix)
	if !ok {
		return nil
	}
	if defaultName != "" && name == defaultName {
		name = ""
	}
	if c.Deleted {
		delete(m, name)
		return nil
	}
	var conf map[string]string
	if err := json.Unmarshal(c.Value, &conf); err != nil {
		return fmt.Errorf("decoding %s: %w", c.Key, err)
	}
	m[name] = conf
	return nil
}

func isQuotaKey(key string) bool { _, ok := quotaPathOf(key); return ok }

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
