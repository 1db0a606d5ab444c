package coordinator

import (
	"context"
	"log/slog"
	"sort"
	"sync"
)

// Runtime holds the shards of one internal topic that this broker leads.
type Runtime struct {
	clock  Clock
	logger *slog.Logger
	newSM  func(*Shard) StateMachine

	mu     sync.RWMutex // guards shards (the map, not the shards' state)
	shards map[int32]*Shard
}

// NewRuntime returns a runtime whose shards run the state machine newSM
// builds for each.
func NewRuntime(clock Clock, logger *slog.Logger, newSM func(*Shard) StateMachine) *Runtime {
	return &Runtime{clock: clock, logger: logger, newSM: newSM, shards: map[int32]*Shard{}}
}

// Shard returns the shard of partition, or nil if this broker does not
// coordinate it.
func (r *Runtime) Shard(partition int32) *Shard {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.shards[partition]
}

// Shards returns every shard, by partition.
func (r *Runtime) Shards() []*Shard {
	r.mu.RLock()
	out := make([]*Shard, 0, len(r.shards))
	for _, s := range r.shards {
		out = append(out, s)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Led reports which partitions are loaded or loading.
func (r *Runtime) Led(partition int32) bool { return r.Shard(partition) != nil }

// Load starts the shard of partition over log: it replays the log on its
// own loop, so Load returns at once; until the replay is done the shard is
// not Loaded. A shard already running is left alone.
func (r *Runtime) Load(partition int32, log Log) { r.LoadEpoch(partition, 0, log) }

// LoadEpoch is Load for the leader epoch leaderEpoch of the partition
// (Shard.LeaderEpoch).
func (r *Runtime) LoadEpoch(partition, leaderEpoch int32, log Log) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shards[partition] != nil {
		return
	}
	s := &Shard{
		Partition: partition, LeaderEpoch: leaderEpoch, log: log, clock: r.clock, logger: r.logger,
		events: make(chan func()), stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.sm = r.newSM(s)
	r.shards[partition] = s
	go s.run()
}

// Unload stops the shard of partition (leadership moved elsewhere).
func (r *Runtime) Unload(partition int32) {
	r.mu.Lock()
	s := r.shards[partition]
	delete(r.shards, partition)
	r.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// Close stops every shard.
func (r *Runtime) Close() {
	for _, s := range r.Shards() {
		r.Unload(s.Partition)
	}
}
