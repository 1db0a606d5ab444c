package replica

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// Partitions gives handlers the partitions this broker leads (Lead) and the
// state of any partition (State).
type Partitions struct {
	broker *config.Broker
	store  *meta.Store
	logs   *storage.Manager
	log    *slog.Logger

	mu sync.Mutex // serialises opening, so a partition is opened once

	// self is the replica set of a partition placed before placement was
	// recorded: this broker alone.
	self []int32
	// delayed holds the requests waiting for a partition to change.
	delayed *DelayedQueue[Key]

	// onDeleted is called with the name of each topic whose logs were
	// deleted (the topic was deleted, or recreated with a new ID), so that
	// what else the broker keeps per topic (its metrics) goes with them.
	onDeleted []func(topic string)

	configs logConfigs // log_configs.go

	repl replicationState // leader.go
	hw   hwCheckpoints    // hw_checkpoint.go

	counters replicationCounters // stats.go
}

// New wires logs to store and starts following metadata changes; the open
// logs follow config changes through configs. Each onDeleted function is
// called with every topic whose logs are deleted, after they are gone.
func New(b *config.Broker, store *meta.Store, configs *dynconfig.Configs, logs *storage.Manager, log *slog.Logger, onDeleted ...func(topic string)) *Partitions {
	p := &Partitions{broker: b, store: store, logs: logs, log: log, onDeleted: onDeleted,
		self: []int32{b.NodeID}, delayed: NewDelayedQueue[Key]()}
	p.registerLogConfigs(configs)
	if err := p.loadHWCheckpoints(); err != nil {
		// Every replicated log then starts from its log start offset:
		// nothing uncommitted is shown, and followers' fetches move it.
		log.Error("reading the high-watermark checkpoints", "err", err)
	}
	store.OnChange(p.apply)
	return p
}

// Delayed is the queue where requests wait for partitions to change: every
// append through Lead's Partition, and every deleted partition, notifies
// its Key.
func (p *Partitions) Delayed() *DelayedQueue[Key] { return p.delayed }

// Log returns the log of partition of t, opening it if needed. The caller
// has checked that the partition exists in the metadata. Handlers use Lead,
// whose appends wake the requests waiting on the partition.
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
	// A request (a follower's fetch, above all) may hold a snapshot from
	// before its topic was deleted: opening the log now would create an
	// empty directory that nothing deletes, and answer the follower as if
	// the leader's log were empty. The store's snapshot is published
	// before the deletion runs (under p.mu), so checking it here is
	// enough.
	if p.store.Snapshot().TopicByID(t.ID) == nil {
		return nil, fmt.Errorf("%w: %s was deleted", meta.ErrUnknownTopic, t.Name)
	}
	l, err := p.logs.Log(t.Name, partition, t.ID, p.storageConfig(snap, t.Name))
	if err != nil {
		return nil, fmt.Errorf("opening %s-%d: %w", t.Name, partition, err)
	}
	p.restoreHighWatermark(snap, t, partition, l)
	return l, nil
}

// OpenAll prepares the log of every partition in snap that this broker
// holds a replica of.
// A log a crash left unrecovered is opened now, so that recovery happens at
// startup rather than on the first request, as Kafka's LogManager does; the
// others (closed cleanly, or never written) are opened on first use or by
// retention, so that a cold start costs a file check per partition rather
// than opening and reading every log.
func (p *Partitions) OpenAll(snap *meta.Snapshot) error {
	for _, t := range snap.AllTopics() {
		for i := int32(0); i < t.Partitions; i++ {
			if !p.IsReplica(snap, t, i) {
				continue // stored only by other brokers
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
		if t == nil || partition >= t.Partitions || !p.IsReplica(snap, t, partition) {
			return nil
		}
		_, err := p.openLocked(snap, t, partition)
		return err
	}
}

// apply reacts to a metadata change: deleted (or recreated) topics lose
// their logs. It looks only at what the change touched, so creating the
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
			p.forgetCheckpointed(name)
			for i := range t.Partitions { // waiting fetches answer at once: the partition is gone
				p.forget(Key{t.ID, i})
				p.delayed.Notify(Key{t.ID, i})
			}
			for _, fn := range p.onDeleted {
				fn(name)
			}
		}
	}
	p.dropLostLeaderships(ev)
}
