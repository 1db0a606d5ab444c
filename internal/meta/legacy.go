package meta

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"kbroker/internal/auth"
)

// The field-based view of a Snapshot (Topics, TopicIDs, TopicConfigs, ...),
// kept up to date beside the sub-images until every reader uses the
// accessors. It copies whole maps on change; it goes once nothing reads it.

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
		quotas:        map[string]map[string]float64{},
		acls:          map[string][]auth.ACL{},
		scram:         map[string]map[string]auth.Credential{},
		brokers:       map[int32]*Broker{},
	}
}

// withLegacy applies b to n's fields. Only the maps the changes touch are
// copied.
func (n *Snapshot) withLegacy(b Batch) error {
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
					return fmt.Errorf("decoding %s: %w", c.Key, err)
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
				return err
			}
		case isQuotaKey(c.Key):
			path, _ := quotaPathOf(c.Key)
			if cow("quotas") {
				n.Quotas = maps.Clone(n.Quotas)
			}
			if err := applyQuota(n.Quotas, c, path); err != nil {
				return err
			}
		case hasPrefix(c.Key, prefixACLs):
			if cow("acls") {
				n.ACLs = maps.Clone(n.ACLs)
			}
			if err := applyACLs(n.ACLs, c); err != nil {
				return err
			}
		case hasPrefix(c.Key, prefixScram):
			if cow("scram") {
				n.Scram = maps.Clone(n.Scram)
			}
			if err := applyScram(n.Scram, c); err != nil {
				return err
			}
		case hasPrefix(c.Key, prefixBrokers):
			if cow("brokers") {
				n.Brokers = maps.Clone(n.Brokers)
			}
			if err := applyBroker(n.Brokers, c); err != nil {
				return err
			}
		case hasPrefix(c.Key, prefixBrokerConf):
			if cow("brokerconf") {
				n.BrokerConfigs = maps.Clone(n.BrokerConfigs)
			}
			if err := applyConfig(n.BrokerConfigs, c, prefixBrokerConf, DefaultEntity); err != nil {
				return err
			}
		}
	}
	return nil
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

func applyQuota(m map[string]map[string]float64, c Change, path string) error {
	if c.Deleted {
		delete(m, path)
		return nil
	}
	var q map[string]float64
	if err := json.Unmarshal(c.Value, &q); err != nil {
		return fmt.Errorf("decoding %s: %w", c.Key, err)
	}
	m[path] = q
	return nil
}

// applyACLs installs one changed ACL key into m (keyed by store key).
func applyACLs(m map[string][]auth.ACL, c Change) error {
	if c.Deleted {
		delete(m, c.Key)
		return nil
	}
	acls, err := decodeACLs(c.Key, c.Value)
	if err != nil {
		return err
	}
	if acls == nil {
		return nil
	}
	m[c.Key] = acls
	return nil
}

// applyScram installs one changed credential into m (user → mechanism →
// credential), copying the user's inner map so older snapshots stay intact.
func applyScram(m map[string]map[string]auth.Credential, c Change) error {
	user, mech, ok := parseScramKey(c.Key)
	if !ok {
		return nil
	}
	inner := maps.Clone(m[user])
	if inner == nil {
		inner = map[string]auth.Credential{}
	}
	if c.Deleted {
		delete(inner, mech)
	} else {
		var j scramJSON
		if err := json.Unmarshal(c.Value, &j); err != nil {
			return fmt.Errorf("decoding %s: %w", c.Key, err)
		}
		inner[mech] = auth.Credential{Mechanism: mech, Salt: j.Salt, StoredKey: j.StoredKey, ServerKey: j.ServerKey, Iterations: j.Iterations}
	}
	if len(inner) == 0 {
		delete(m, user)
	} else {
		m[user] = inner
	}
	return nil
}

func applyBroker(m map[int32]*Broker, c Change) error {
	name, ok := nameAfter(c.Key, prefixBrokers)
	if !ok {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil // not ours: ignore rather than fail the whole snapshot
	}
	if c.Deleted {
		delete(m, int32(id))
		return nil
	}
	b := new(Broker)
	if err := json.Unmarshal(c.Value, b); err != nil {
		return fmt.Errorf("decoding %s: %w", c.Key, err)
	}
	b.ID = int32(id)
	m[b.ID] = b
	return nil
}
