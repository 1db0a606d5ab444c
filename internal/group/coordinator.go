package group

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/coordinator"
)

// Coordinator serves the groups whose `__consumer_offsets` partitions this
// broker leads. Its methods are called from request handlers: each finds
// the group's shard, runs on the shard's loop and waits for the answer.
type Coordinator struct {
	cfg Config
	rt  *coordinator.Runtime
	// partitions is the partition count of `__consumer_offsets` as it
	// exists (it may have been created under another
	// offsets.topic.num.partitions); cfg.Partitions until it does.
	partitions atomic.Int32
	counters   counters // stats.go
}

// New returns a coordinator with no shards loaded yet.
func New(cfg Config, clock coordinator.Clock, logger *slog.Logger) *Coordinator {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Coordinator{cfg: cfg}
	c.partitions.Store(cfg.Partitions)
	c.rt = coordinator.NewRuntime(clock, logger, func(rs *coordinator.Shard) coordinator.StateMachine {
		return &shard{cfg: &c.cfg, counters: &c.counters, rt: rs, groups: map[string]*group{}}
	})
	return c
}

// Config is the coordinator's configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// Partition is group's `__consumer_offsets` partition.
func (c *Coordinator) Partition(group string) int32 { return Partition(group, c.partitions.Load()) }

// Load starts coordinating the groups of partition, replaying log.
func (c *Coordinator) Load(partition int32, log coordinator.Log) { c.rt.Load(partition, log) }

// Unload stops coordinating partition; its parked requests get
// NOT_COORDINATOR.
func (c *Coordinator) Unload(partition int32) { c.rt.Unload(partition) }

// Led reports whether partition is loaded (or loading) here.
func (c *Coordinator) Led(partition int32) bool { return c.rt.Led(partition) }

// Close stops every shard.
func (c *Coordinator) Close() { c.rt.Close() }

// shardOf returns the shard coordinating group, or the error a client gets
// when there is none ready: NOT_COORDINATOR if another broker (or nobody)
// coordinates it, COORDINATOR_LOAD_IN_PROGRESS while it replays.
func (c *Coordinator) shardOf(group string) (*coordinator.Shard, *kerr.Error) {
	rs := c.rt.Shard(c.Partition(group))
	switch {
	case rs == nil:
		return nil, kerr.NotCoordinator
	case rs.Failed():
		return nil, kerr.CoordinatorNotAvailable
	case !rs.Loaded():
		return nil, kerr.CoordinatorLoadInProgress
	}
	return rs, nil
}

// call runs fn on the loop of group's shard and waits for the answer fn
// gives to done, which may come later (a JoinGroup parked until the
// rebalance completes). It returns the time spent parked. A request whose
// context ends first gets no answer: its connection is closing.
func call[T any](ctx context.Context, c *Coordinator, groupID string, fn func(s *shard, done func(T))) (resp T, parked time.Duration, errc *kerr.Error) {
	rs, errc := c.shardOf(groupID)
	if errc != nil {
		return resp, 0, errc
	}
	return runOn(ctx, rs, fn)
}

func runOn[T any](ctx context.Context, rs *coordinator.Shard, fn func(s *shard, done func(T))) (resp T, parked time.Duration, errc *kerr.Error) {
	ch := make(chan T, 1)
	var s *shard
	if err := rs.Do(func() {
		s = rs.State().(*shard)
		fn(s, func(v T) { ch <- v })
	}); err != nil {
		return resp, 0, kerr.NotCoordinator
	}
	start := time.Now()
	select {
	case resp = <-ch:
		return resp, time.Since(start), nil
	case <-ctx.Done():
		return resp, time.Since(start), kerr.RequestTimedOut
	}
}
