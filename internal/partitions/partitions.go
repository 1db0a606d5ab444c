// Package partitions keeps the partition logs this broker leads in step with
// the metadata: it opens a partition's log with the topic's effective
// configs, applies config changes to open logs, and deletes the logs of
// deleted topics.
package partitions

import (
	"fmt"
	"log/slog"
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

	// minISR caches each topic's min.insync.replicas, which Produce checks
	// on every acks=all request; rebuilt when configs change.
	minISR atomic.Pointer[map[string]int]
}

// New wires logs to store and starts following metadata changes.
func New(b *config.Broker, store *meta.Store, logs *storage.Manager, log *slog.Logger) *Partitions {
	p := &Partitions{broker: b, store: store, logs: logs, log: log}
	p.cacheSettings(store.Snapshot())
	store.OnChange(p.apply)
	return p
}

// Layers are where a topic's config values come from in snap.
func (p *Partitions) Layers(snap *meta.Snapshot, topic string) config.Layers {
	return config.Layers{
		Topic:          snap.TopicConfigs[topic],
		Broker:         snap.BrokerConfigs[strconv.Itoa(int(p.broker.NodeID))],
		ClusterDefault: snap.BrokerConfigs[""],
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
	if l := p.logs.Get(t.Name, partition); l != nil {
		return l, nil
	}
	l, err := p.logs.Log(t.Name, partition, t.ID, config.StorageConfig(p.Layers(snap, t.Name)))
	if err != nil {
		return nil, fmt.Errorf("opening %s-%d: %w", t.Name, partition, err)
	}
	return l, nil
}

// OpenAll opens the log of every partition in snap, so that recovery after a
// crash happens at startup rather than on the first request.
func (p *Partitions) OpenAll(snap *meta.Snapshot) error {
	for _, t := range snap.Topics {
		for i := int32(0); i < t.Partitions; i++ {
			if _, err := p.Log(snap, t, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// MinInsyncReplicas is the topic's effective min.insync.replicas.
func (p *Partitions) MinInsyncReplicas(topic string) int {
	if n, ok := (*p.minISR.Load())[topic]; ok {
		return n
	}
	return 1
}

func (p *Partitions) cacheSettings(snap *meta.Snapshot) {
	m := make(map[string]int, len(snap.Topics))
	for name := range snap.Topics {
		n, _ := strconv.Atoi(config.TopicValue("min.insync.replicas", p.Layers(snap, name)))
		m[name] = n
	}
	p.minISR.Store(&m)
}

// apply reacts to a metadata change: deleted topics lose their logs, and
// open logs of topics whose effective configs may have changed get them.
func (p *Partitions) apply(old, cur *meta.Snapshot) {
	for name, t := range old.Topics {
		if nt, ok := cur.Topics[name]; !ok || nt.ID != t.ID {
			p.mu.Lock()
			if err := p.logs.DeleteTopic(name); err != nil {
				p.log.Error("deleting topic logs", "topic", name, "err", err)
			}
			p.mu.Unlock()
		}
	}
	brokerChanged := !sameConfigs(old.BrokerConfigs, cur.BrokerConfigs)
	if brokerChanged || len(old.Topics) != len(cur.Topics) || !sameConfigs(old.TopicConfigs, cur.TopicConfigs) {
		p.cacheSettings(cur)
	}
	for name, t := range cur.Topics {
		if !brokerChanged && sameConfig(old.TopicConfigs[name], cur.TopicConfigs[name]) {
			continue
		}
		cfg := config.StorageConfig(p.Layers(cur, name))
		for i := int32(0); i < t.Partitions; i++ {
			if l := p.logs.Get(name, i); l != nil {
				l.SetConfig(cfg)
			}
		}
	}
}

func sameConfigs(a, b map[string]map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameConfig(v, b[k]) {
			return false
		}
	}
	return true
}

func sameConfig(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
