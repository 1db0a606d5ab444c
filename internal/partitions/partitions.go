// Package partitions keeps the partition logs this broker leads in step with
// the metadata: it opens a partition's log with the topic's effective
// configs, applies config changes to open logs, and deletes the logs of
// deleted topics.
package partitions

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// Partitions gives handlers the log of a partition.
type Partitions struct {
	broker *config.Broker
	store  *meta.Store
	logs   *storage.Manager
	log    *slog.Logger

	mu sync.Mutex // serialises opening, so a partition is opened once

	// onDeleted is called with the name of each topic whose logs were
	// deleted (the topic was deleted, or recreated with a new ID), so that
	// what else the broker keeps per topic (its metrics) goes with them.
	onDeleted []func(topic string)

	// brokerMinISR caches the broker-level min.insync.replicas, which
	// Produce checks on every acks=all request.
	brokerMinISR atomic.Int32
}

// New wires logs to store and starts following metadata changes. Each
// onDeleted function is called with every topic whose logs are deleted,
// after they are gone.
func New(b *config.Broker, store *meta.Store, logs *storage.Manager, log *slog.Logger, onDeleted ...func(topic string)) *Partitions {
	p := &Partitions{broker: b, store: store, logs: logs, log: log, onDeleted: onDeleted}
	p.cacheBrokerSettings(store.Snapshot())
	store.OnChange(p.apply)
	return p
}

// Layers are where a topic's config values come from in snap.
func (p *Partitions) Layers(snap *meta.Snapshot, topic string) config.Layers {
	return config.Layers{
		Topic:          snap.TopicConfig(topic),
		Broker:         snap.BrokerConfig(strconv.Itoa(int(p.broker.NodeID))),
		ClusterDefault: snap.BrokerConfig(""),
		Static:         p.broker.Props,
	}
}

// Log returns the log of partition of t, opening it if needed. The caller
// has checked that the partition exists in the metadata.
func (p *Partitions) Log(snap *meta.Snapshot, t *meta.Topic, partition int32) (*storage.Log, error) {
	if l := p.logs.Get(t.Name, partition); l != nil {
		return l, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.openLocked(snap, t, partition)
}

// openLocked returns the log of partition of t, opening it if no one has
// meanwhile. The caller holds p.mu.
func (p *Partitions) openLocked(snap *meta.Snapshot, t *meta.Topic, partition int32) (*storage.Log, error) {
	if l := p.logs.Get(t.Name, partition); l != nil {
		return l, nil
	}
	l, err := p.logs.Log(t.Name, partition, t.ID, config.StorageConfig(p.Layers(snap, t.Name)))
	if err != nil {
		return nil, fmt.Errorf("opening %s-%d: %w", t.Name, partition, err)
	}
	return l, nil
}

// OpenAll prepares the log of every partition in snap that this broker leads.
// A log a crash left unrecovered is opened now, so that recovery happens at
// startup rather than on the first request, as Kafka's LogManager does; the
// others (closed cleanly, or never written) are opened on first use or by
// retention, so that a cold start costs a file check per partition rather
// than opening and reading every log.
func (p *Partitions) OpenAll(snap *meta.Snapshot) error {
	for _, t := range snap.AllTopics() {
		for i := int32(0); i < t.Partitions; i++ {
			if t.Leader(i, p.broker.NodeID) != p.broker.NodeID {
				continue // led, and stored, by another broker
			}
			if !p.logs.NeedsRecovery(t.Name, i) {
				p.logs.Defer(t.Name, i, p.opener(t.Name, i))
				continue
			}
			if _, err := p.Log(snap, t, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// opener opens a deferred log with the metadata current at that time. The
// snapshot is read under p.mu, which apply holds to delete a topic's logs, so
// a topic deleted (or recreated) since is never reopened: either it is gone
// from the snapshot, or apply deletes it after this open.
func (p *Partitions) opener(topic string, partition int32) func() error {
	return func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		snap := p.store.Snapshot()
		t := snap.Topic(topic)
		if t == nil || partition >= t.Partitions || t.Leader(partition, p.broker.NodeID) != p.broker.NodeID {
			return nil
		}
		_, err := p.openLocked(snap, t, partition)
		return err
	}
}

// MinInsyncReplicas is the topic's effective min.insync.replicas in snap.
func (p *Partitions) MinInsyncReplicas(snap *meta.Snapshot, topic string) int {
	if v, ok := snap.TopicConfig(topic)["min.insync.replicas"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return int(p.brokerMinISR.Load())
}

// cacheBrokerSettings keeps the broker-level values that the hot path reads.
func (p *Partitions) cacheBrokerSettings(snap *meta.Snapshot) {
	n, _ := strconv.Atoi(config.TopicValue("min.insync.replicas", p.Layers(snap, "")))
	p.brokerMinISR.Store(int32(n))
}

// apply reacts to a metadata change: deleted (or recreated) topics lose
// their logs, and open logs whose effective configs may have changed get
// them. It looks only at what the change touched, so creating the
// ten-thousandth topic costs what creating the first did.
func (p *Partitions) apply(ev meta.Event) {
	deleted := ev.ChangedTopics()
	if ev.Full {
		deleted = slices.Collect(ev.Old.TopicNames())
	}
	for _, name := range deleted {
		t, nt := ev.Old.Topic(name), ev.Cur.Topic(name)
		if t != nil && (nt == nil || nt.ID != t.ID) {
			p.mu.Lock()
			if err := p.logs.DeleteTopic(name); err != nil {
				p.log.Error("deleting topic logs", "topic", name, "err", err)
			}
			p.mu.Unlock()
			for _, fn := range p.onDeleted {
				fn(name)
			}
		}
	}
	reconfigure := ev.ChangedTopicConfigs()
	if ev.Full || ev.BrokerConfigsChanged() {
		p.cacheBrokerSettings(ev.Cur)
		reconfigure = slices.Collect(ev.Cur.TopicNames())
	}
	for _, name := range reconfigure {
		t := ev.Cur.Topic(name)
		if t == nil {
			continue
		}
		cfg := config.StorageConfig(p.Layers(ev.Cur, name))
		for i := int32(0); i < t.Partitions; i++ {
			if l := p.logs.Get(name, i); l != nil {
				l.SetConfig(cfg)
			}
		}
	}
}
