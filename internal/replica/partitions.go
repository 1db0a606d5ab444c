package replica

import (
	"errors"
	"fmt"
	"hash/maphash"
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

	// mu is read-locked while a log is opened and write-locked while logs
	// are deleted, so that no deletion runs under an opening; opening
	// (striped by partition) makes each partition open once, with its
	// high watermark restored once, while different ones open at once.
	mu      sync.RWMutex
	opening [64]sync.Mutex

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
	throttle throttles           // throttle.go
}

// New wires logs to store and starts following metadata changes; the open
// logs follow config changes through configs. Each onDeleted function is
// called with every topic whose logs are deleted, after they are gone.
func New(b *config.Broker, store *meta.Store, configs *dynconfig.Configs, logs *storage.Manager, log *slog.Logger, onDeleted ...func(topic string)) *Partitions {
	p := &Partitions{broker: b, store: store, logs: logs, log: log, onDeleted: onDeleted,
		self: []int32{b.NodeID}, delayed: NewDelayedQueue[Key]()}
	p.registerLogConfigs(configs)
	p.registerThrottles(configs)
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
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.openLocked(snap, t, partition)
}

// openLocked returns the log of partition of t, opening it if no one has
// meanwhile. The caller holds p.mu read-locked.
func (p *Partitions) openLocked(snap *meta.Snapshot, t *meta.Topic, partition int32) (*storage.Log, error) {
	mu := &p.opening[openingStripe(t.Name, partition, len(p.opening))]
	mu.Lock()
	defer mu.Unlock()
	if l := p.logs.Get(t.Name, partition); l != nil {
		return l, nil
	}
	// A request (a follower's fetch, above all) may hold a snapshot from
	// before its topic was deleted: opening the log now would create an
	// empty directory that nothing deletes, and answer the follower as if
	// the leader's log were empty. The store's snapshot is published
	// before the deletion runs (under p.mu), so checking it here is
	// enough.
	cur := p.store.Snapshot()
	curT := cur.TopicByID(t.ID)
	if curT == nil {
		return nil, fmt.Errorf("%w: %s was deleted", meta.ErrUnknownTopic, t.Name)
	}
	// For the same reason a replica reassigned away since snap is not
	// reopened: its log was deleted (deleteUnassigned), and an empty one
	// would stay behind.
	if partition >= curT.Partitions || !p.IsReplica(cur, curT, partition) {
		return nil, &stateError{ErrNotLeader, fmt.Sprintf("Broker %d holds no replica of %s-%d.", p.broker.NodeID, t.Name, partition)}
	}
	l, err := p.logs.Log(t.Name, partition, t.ID, p.storageConfig(cur, t.Name))
	if err != nil {
		return nil, fmt.Errorf("opening %s-%d: %w", t.Name, partition, err)
	}
	// A config change applied while the log was being opened passed it
	// by (applyLogConfigs sets only the logs already open): now that it is
	// open, give it the configs of the newest snapshot, again until no
	// change came in meanwhile, so that the last configs set are the
	// newest whichever of this and the change's applier runs last.
	for s := cur; ; {
		next := p.store.Snapshot()
		if next.Rev == s.Rev {
			break
		}
		s = next
		l.SetConfig(p.storageConfig(s, t.Name))
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
		p.mu.RLock()
		defer p.mu.RUnlock()
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
	p.deleteUnassigned(ev)
	p.createAssigned(ev)
}

// deleteUnassigned deletes the logs of the partitions ev took this broker
// out of, as Kafka's broker deletes a replica's log once the controller no
// longer assigns it (StopReplica with delete): a reassignment that
// completed without this broker, or a cancelled one that had added it. A
// replica being removed by a reassignment in progress is still among the
// record's replicas, so its log stays until the reassignment completes.
func (p *Partitions) deleteUnassigned(ev meta.Event) {
	var gone []Key
	check := func(t *meta.Topic, partition int32, wasReplica bool) {
		if partition >= t.Partitions || p.IsReplica(ev.Cur, t, partition) {
			return
		}
		if wasReplica || p.logs.Get(t.Name, partition) != nil {
			gone = append(gone, Key{t.ID, partition})
		}
	}
	if ev.Full {
		for _, t := range ev.Cur.AllTopics() {
			for i := range t.Partitions {
				check(t, i, false)
			}
		}
	} else {
		for _, k := range ev.ChangedPartitions() {
			t := ev.Cur.TopicByID(k.Topic)
			if t == nil {
				continue // a deleted topic: apply deleted its logs
			}
			old := ev.Old.TopicByID(k.Topic)
			check(t, k.Partition, old != nil && k.Partition < old.Partitions && p.IsReplica(ev.Old, old, k.Partition))
		}
	}
	for _, key := range gone {
		p.deleteReplica(ev.Cur.TopicByID(key.Topic).Name, key)
	}
}

// deleteReplica deletes the log of a partition this broker no longer
// holds a replica of, and forgets what it kept of it.
func (p *Partitions) deleteReplica(topic string, key Key) {
	p.mu.Lock()
	err := p.logs.DeletePartition(topic, key.Partition)
	p.mu.Unlock()
	if err != nil {
		p.log.Error("deleting the log of a replica no longer assigned here", "topic", topic, "partition", key.Partition, "err", err)
	} else {
		p.log.Info("deleted the log of a replica no longer assigned here", "topic", topic, "partition", key.Partition)
	}
	p.forgetCheckpointedPartition(topic, key.Partition)
	p.forget(key)
	p.delayed.Notify(key) // waiting fetches and produces answer NOT_LEADER_OR_FOLLOWER now
}

// DeleteStrayLogs deletes the logs found on disk at startup of partitions
// of snap's topics that this broker holds no replica of: those reassigned
// away while it was down, whose deletion it never saw.
func (p *Partitions) DeleteStrayLogs(snap *meta.Snapshot) {
	p.logs.OnDisk(func(topic string, partition int32) {
		t := snap.Topic(topic)
		if t == nil || partition >= t.Partitions || p.IsReplica(snap, t, partition) {
			return
		}
		p.deleteReplica(topic, Key{t.ID, partition})
	})
}

// createWorkers is how many logs createAssigned creates at once: creating
// one is a dozen small file operations, which overlap well.
const createWorkers = 4

// createOnAssignmentMax is the most new replicas one metadata change may
// give this broker for createAssigned to create their logs at once. A
// larger change is a bulk creation (thousands of topics' partitions in a
// few requests), whose partitions, mostly idle, get their logs on first
// use as at startup: an open log holds about 1.6 KB of heap and its
// deferred creation fsyncs at Close, which would make such a broker's
// memory and shutdown grow with partitions nobody writes.
const createOnAssignmentMax = 1000

// createAssigned creates (or opens) in the background the logs of the
// partitions ev made this broker a replica of — a new topic, added
// partitions, a reassignment here — as Kafka's broker creates a replica's
// log when it applies the metadata that assigns it, rather than on the
// first request for it: the first produce, fetch or ListOffsets of a new
// topic then finds its log open. A change of more than
// createOnAssignmentMax replicas is left to first use. It runs off the
// store's goroutine, since a listener must not block; each open rechecks
// the current metadata (opener), so a partition deleted or reassigned
// away meanwhile is left alone.
func (p *Partitions) createAssigned(ev meta.Event) {
	var open []func() error
	add := func(t *meta.Topic, partition int32) {
		if !p.IsReplica(ev.Cur, t, partition) || p.wasReplica(ev.Old, t, partition) || p.logs.Get(t.Name, partition) != nil {
			return
		}
		open = append(open, p.opener(t.Name, partition))
	}
	if ev.Full {
		for _, t := range ev.Cur.AllTopics() {
			for i := range t.Partitions {
				add(t, i)
			}
		}
	} else {
		for _, name := range ev.ChangedTopics() {
			if t := ev.Cur.Topic(name); t != nil {
				for i := range t.Partitions {
					add(t, i)
				}
			}
		}
		for _, k := range ev.ChangedPartitions() {
			if t := ev.Cur.TopicByID(k.Topic); t != nil && k.Partition < t.Partitions {
				add(t, k.Partition)
			}
		}
	}
	if len(open) == 0 || len(open) > createOnAssignmentMax {
		return
	}
	work := make(chan func() error, len(open))
	for _, fn := range open {
		work <- fn
	}
	close(work)
	for range min(createWorkers, len(open)) {
		go func() {
			for fn := range work {
				if err := fn(); err != nil && !errors.Is(err, storage.ErrClosed) {
					p.log.Warn("creating the log of a partition assigned here", "err", err)
				}
			}
		}()
	}
}

// wasReplica reports whether this broker held a replica of partition of t
// (by id) in old.
func (p *Partitions) wasReplica(old *meta.Snapshot, t *meta.Topic, partition int32) bool {
	ot := old.TopicByID(t.ID)
	return ot != nil && partition < ot.Partitions && p.IsReplica(old, ot, partition)
}

var openingSeed = maphash.MakeSeed()

// openingStripe is the index of the opening lock of a partition.
func openingStripe(topic string, partition int32, stripes int) int {
	var h maphash.Hash
	h.SetSeed(openingSeed)
	h.WriteString(topic)
	h.WriteByte(byte(partition))
	h.WriteByte(byte(partition >> 8))
	h.WriteByte(byte(partition >> 16))
	h.WriteByte(byte(partition >> 24))
	return int(h.Sum64() % uint64(stripes))
}
