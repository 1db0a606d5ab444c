package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// Live brokers. Each broker registers itself at brokers/<node.id>: in a
// cluster under its etcd lease (internal/cluster), so the key vanishes when
// the broker stops or loses etcd for longer than the lease; with the bbolt
// backend the single broker writes its own record at startup
// (RegisterLocalBroker). Either way every store sees the key through its
// watch, and Snapshot.LiveBrokers lists the brokers that are alive.

const prefixBrokers = "brokers/"

// Broker is one live broker's registration.
type Broker struct {
	ID        int32      `json:"id"`
	Rack      *string    `json:"rack,omitempty"`
	Endpoints []Endpoint `json:"endpoints"`
	// Configs are the broker's static (server.properties) configs that are
	// not sensitive, so any broker can answer DescribeConfigs for it.
	Configs map[string]string `json:"configs,omitempty"`
	// Hidden names the static keys it set whose values it does not publish
	// (sensitive ones, and keys no catalog knows).
	Hidden []string `json:"hidden,omitempty"`
	// InControlledShutdown: the broker is stopping and has asked the
	// controller to move its leaderships and take it out of every ISR
	// (Kafka's BrokerRegistration.inControlledShutdown). It stays live,
	// serving, until it closes.
	InControlledShutdown bool `json:"in_controlled_shutdown,omitempty"`
	// UncleanShutdown: the broker's previous run did not end with a clean
	// shutdown (it was killed, or crashed), so its logs may have lost
	// records it had not flushed. Until the controller has taken it out of
	// every ISR and ELR (KIP-966; Kafka learns the same from the broker
	// epoch of its registration) and cleared this mark, it neither leads
	// nor counts as in sync or as an eligible leader replica.
	UncleanShutdown bool `json:"unclean_shutdown,omitempty"`
	// Epoch is the broker epoch of this registration (Kafka's
	// BrokerRegistration.epoch, KIP-903): it differs for every
	// registration of the id and grows with each, so a fetch made by an
	// earlier run of the broker can be told from one made by this run. In
	// a cluster it is one past the etcd revision at which the id was seen
	// unregistered just before the registration was written
	// (internal/cluster), so at most the key's create revision; with
	// bbolt, one past the previous registration's. 0: not known (a
	// registration written by a kbroker without broker epochs).
	Epoch int64 `json:"epoch,omitempty"`
}

// Endpoint is one advertised listener.
type Endpoint struct {
	Name     string `json:"name"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	Protocol string `json:"security_protocol"`
}

// Endpoint returns the broker's advertised endpoint on the named listener.
func (b *Broker) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// BrokerKey is the key of a broker's registration, relative to the store's
// root (the etcd prefix in a cluster).
func BrokerKey(id int32) string { return prefixBrokers + strconv.Itoa(int(id)) }

// BrokersDelta holds the registrations a batch wrote, by broker id; nil:
// gone.
type BrokersDelta map[int32]*Broker

// The broker sub-image is a plain map copied on change: a cluster has a
// handful of brokers.
var brokersKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		if !hasPrefix(c.Key, prefixBrokers) {
			return false, nil
		}
		name, ok := nameAfter(c.Key, prefixBrokers)
		if !ok {
			return true, nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return true, nil // not ours: ignore rather than fail the whole snapshot
		}
		var b *Broker
		if !c.Deleted {
			b = new(Broker)
			if err := json.Unmarshal(c.Value, b); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
			b.ID = int32(id)
		}
		setDelta(&d.Brokers, int32(id), b)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		if len(d.Brokers) > 0 {
			next.brokers = cloneWith(next.brokers, d.Brokers, func(b *Broker) bool { return b == nil })
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.Brokers, later.Brokers) },
}

// LiveBrokers holds the live brokers by id. The map is shared: never
// modify it.
func (s *Snapshot) LiveBrokers() map[int32]*Broker { return s.brokers }

// ChangedBrokers reports whether a broker registered or went away.
func (e Event) ChangedBrokers() bool { return len(e.delta().Brokers) > 0 }

// RegisterLocalBroker makes b the only live broker, for the single-broker
// (bbolt) mode: registrations of earlier runs under another node.id are
// removed, since no other broker shares this store. The registration gets
// the broker epoch one past the previous one of its id (b.Epoch is
// ignored).
func (s *Store) RegisterLocalBroker(ctx context.Context, b Broker) error {
	return s.Update(ctx, func(tx Tx) error {
		b.Epoch = 1
		for k, raw := range tx.List(prefixBrokers) {
			if k != BrokerKey(b.ID) {
				tx.Delete(k)
				continue
			}
			var prev Broker
			if json.Unmarshal(raw, &prev) == nil {
				b.Epoch = prev.Epoch + 1
			}
		}
		putJSON(tx, BrokerKey(b.ID), b)
		return nil
	})
}

// WaitFor returns once this store's snapshot (and its listeners) include
// revision rev, for writes made around Update (such as a lease-bound
// registration written directly to etcd).
func (s *Store) WaitFor(ctx context.Context, rev int64) error { return s.waitFor(ctx, rev) }
