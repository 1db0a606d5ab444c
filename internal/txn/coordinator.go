package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/coordinator"
	"kbroker/internal/meta"
)

// Marker is one commit or abort marker the coordinator has written to a
// partition of a transaction.
type Marker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// MarkerWriter writes a marker to its partition and returns once the
// partition holds it. The broker's wiring gives one that routes
// `__consumer_offsets` markers to the group coordinator and every other to
// the data plane. An error wrapping ErrPartitionGone drops the partition
// from the transaction (its topic was deleted); any other is retried.
type MarkerWriter func(ctx context.Context, m Marker) error

// ErrPartitionGone is what a MarkerWriter returns for a partition that no
// longer exists: Kafka's coordinator then skips it.
var ErrPartitionGone = errors.New("txn: the partition of the marker no longer exists")

// IDSource hands out producer ids (ProducerIDs).
type IDSource interface {
	Next(ctx context.Context) (int64, error)
}

// Coordinator serves the transactional ids whose `__transaction_state`
// partitions this broker leads, on the coordinator runtime: one shard per
// partition, its state replayed from the log at load and changed only on
// the shard's loop, every change written before it is answered.
type Coordinator struct {
	cfg     Config
	rt      *coordinator.Runtime
	ids     IDSource
	markers MarkerWriter
	// partitions is the partition count of `__transaction_state` as it
	// exists; cfg.Partitions until it does.
	partitions atomic.Int32
	// epochs holds the coordinator epoch of each loaded partition (the
	// leader epoch of the state partition, int32 by int32), stamped into
	// markers.
	epochs sync.Map
	stats  stats // stats.go
	// workers run the marker writers of every shard (workers.go).
	workers *workers
}

// New returns a coordinator with no shards loaded yet.
func New(cfg Config, ids IDSource, markers MarkerWriter, clock coordinator.Clock, logger *slog.Logger) *Coordinator {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Coordinator{cfg: cfg, ids: ids, markers: markers, workers: newWorkers()}
	c.partitions.Store(cfg.Partitions)
	c.rt = coordinator.NewRuntime(clock, logger, func(rs *coordinator.Shard) coordinator.StateMachine {
		ctx, cancel := context.WithCancel(context.Background())
		return &shard{c: c, rt: rs, txns: map[string]*txnMeta{}, ctx: ctx, cancel: cancel}
	})
	return c
}

// Config is the coordinator's configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// Partition is transactionalID's `__transaction_state` partition.
func (c *Coordinator) Partition(transactionalID string) int32 {
	return Partition(transactionalID, c.partitions.Load())
}

// Load starts coordinating the ids of partition, replaying log; epoch is
// the coordinator epoch its markers carry: the partition's leader epoch.
func (c *Coordinator) Load(partition int32, epoch int32, log coordinator.Log) {
	c.epochs.Store(partition, epoch)
	c.rt.LoadEpoch(partition, epoch, log)
}

func (c *Coordinator) epochOf(partition int32) int32 {
	e, _ := c.epochs.Load(partition)
	n, _ := e.(int32)
	return n
}

// Unload stops coordinating partition.
func (c *Coordinator) Unload(partition int32) { c.rt.Unload(partition) }

// Led reports whether partition is loaded (or loading) here.
func (c *Coordinator) Led(partition int32) bool { return c.rt.Led(partition) }

// Close stops every shard.
func (c *Coordinator) Close() { c.rt.Close() }

// OpenLog opens the log of a `__transaction_state` partition this broker
// leads, with its leader epoch (the coordinator epoch).
type OpenLog func(snap *meta.Snapshot, t *meta.Topic, partition int32) (coordinator.Log, int32, error)

// Reconcile loads a shard for every `__transaction_state` partition this
// broker (self) leads in snap and unloads those it no longer leads, so an
// id's coordinator moves with its partition's leadership as elections
// change it (Snapshot.Leader). A shard loaded in an older leader epoch is
// loaded again, with the new coordinator epoch: another broker may have
// led and written in between. Call it at start and after every metadata
// change of the topic or its partitions.
func (c *Coordinator) Reconcile(snap *meta.Snapshot, self int32, open OpenLog) error {
	t := snap.Topic(Topic)
	if t != nil {
		c.partitions.Store(t.Partitions)
	}
	leads := func(p int32) (bool, int32) {
		if t == nil || p >= t.Partitions || snap.Leader(t, p, self) != self {
			return false, 0
		}
		return true, snap.Partition(t, p).LeaderEpoch
	}
	for _, rs := range c.rt.Shards() {
		if led, epoch := leads(rs.Partition); !led || epoch != rs.LeaderEpoch {
			c.rt.Unload(rs.Partition)
		}
	}
	if t == nil {
		return nil
	}
	var firstErr error
	for p := int32(0); p < t.Partitions; p++ {
		led, _ := leads(p)
		if !led || c.rt.Led(p) {
			continue
		}
		l, epoch, err := open(snap, t, p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		c.Load(p, epoch, l)
	}
	return firstErr
}

// shardOf returns the shard coordinating transactionalID, or the error a
// client gets when there is none ready.
func (c *Coordinator) shardOf(transactionalID string) (*coordinator.Shard, *kerr.Error) {
	rs := c.rt.Shard(c.Partition(transactionalID))
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

// call runs fn on the loop of transactionalID's shard and waits for the
// answer it gives to done.
func call[T any](ctx context.Context, c *Coordinator, transactionalID string, fn func(s *shard, done func(T))) (resp T, errc *kerr.Error) {
	rs, errc := c.shardOf(transactionalID)
	if errc != nil {
		return resp, errc
	}
	return runOn(ctx, rs, fn)
}

func runOn[T any](ctx context.Context, rs *coordinator.Shard, fn func(s *shard, done func(T))) (resp T, errc *kerr.Error) {
	ch := make(chan T, 1)
	if err := rs.Do(func() { fn(rs.State().(*shard), func(v T) { ch <- v }) }); err != nil {
		return resp, kerr.NotCoordinator
	}
	select {
	case resp = <-ch:
		return resp, nil
	case <-ctx.Done():
		return resp, kerr.RequestTimedOut
	}
}
