package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"kbroker/internal/storage"
)

// Log is the partition log of a shard: what it replays at load and appends
// its writes to (a *storage.Log, or a PartitionLog when the partition has
// replicas to wait for).
type Log interface {
	Append(batch []byte, now time.Time) (storage.AppendResult, error)
	// ReadUpTo reads whole batches below upTo: a shard replays up to the
	// log end, not the high watermark, as Kafka's coordinator loader
	// does, since a newly elected leader's log is the partition's log
	// and what it holds past the high watermark is committed as the
	// followers copy it.
	ReadUpTo(offset int64, maxBytes int32, minOneBatch bool, upTo int64) (storage.ReadResult, error)
	LogStartOffset() int64
	LogEndOffset() int64
}

// Committer is a Log whose appends count only once its in-sync replicas
// hold them (Kafka's coordinators write with acks=-1): a shard's write
// returns only when AwaitCommitted does. A log without it (one replica)
// commits on append.
type Committer interface {
	// AwaitCommitted waits until the record at lastOffset is committed,
	// ctx ends (the shard unloads) or the log's write timeout passes.
	AwaitCommitted(ctx context.Context, lastOffset int64) error
}

// StateMachine is the state a shard owns. Every method runs on the shard's
// event loop.
type StateMachine interface {
	// Replay applies one record read back from the log at load.
	Replay(r Record) error
	// Loaded is called once the log has been replayed, before any request.
	Loaded()
	// Unloaded is called when the shard stops (leadership moved, broker
	// shutting down): waiters get their answer now.
	Unloaded()
}

// ErrNotLoaded is returned for work sent to a shard that has stopped.
var ErrNotLoaded = errors.New("coordinator: shard is not loaded")

// Shard is one internal-topic partition's coordinator state and the loop
// that owns it.
type Shard struct {
	Partition int32
	// LeaderEpoch is the leader epoch of the partition when the shard was
	// loaded: a shard is loaded afresh for a new epoch, since another
	// broker may have led (and written) in between.
	LeaderEpoch int32
	log         Log
	clock       Clock
	logger      *slog.Logger
	sm          StateMachine

	events chan func()
	// ctx ends when the shard stops, so a write waiting for its replicas
	// gives up and the loop can finish.
	ctx      context.Context
	cancel   context.CancelFunc
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	loaded   atomic.Bool
	failed   atomic.Bool
}

// Loaded reports whether the shard has finished replaying its log. Requests
// arriving before that are answered COORDINATOR_LOAD_IN_PROGRESS.
func (s *Shard) Loaded() bool { return s.loaded.Load() }

// Failed reports a shard whose log could not be replayed: it never loads,
// and its requests get COORDINATOR_NOT_AVAILABLE.
func (s *Shard) Failed() bool { return s.failed.Load() }

// Now is the shard's clock.
func (s *Shard) Now() time.Time { return s.clock.Now() }

// Do runs fn on the shard's event loop. It returns ErrNotLoaded, without
// running fn, if the shard has stopped.
func (s *Shard) Do(fn func()) error {
	select {
	case <-s.stop:
		return ErrNotLoaded
	default:
	}
	select {
	case s.events <- fn:
		return nil
	case <-s.stop:
		return ErrNotLoaded
	}
}

// Timer is a function scheduled on a shard's loop. Stop, called on the loop,
// guarantees the function will not run.
type Timer struct {
	stopped bool
	t       Stopper
}

// Stop cancels the timer; safe on a nil timer. Call it on the loop.
func (t *Timer) Stop() {
	if t == nil {
		return
	}
	t.stopped = true
	t.t.Stop()
}

// After runs fn on the loop after d, unless the returned timer is stopped
// first. Call it on the loop.
func (s *Shard) After(d time.Duration, fn func()) *Timer {
	t := &Timer{}
	t.t = s.clock.AfterFunc(d, func() {
		_ = s.Do(func() {
			if !t.stopped {
				t.stopped = true
				fn()
			}
		})
	})
	return t
}

// Write appends records to the shard's partition log as one batch. It runs
// on the loop and returns once the log holds them, so the caller answers
// its request only after the change is as durable as any acknowledged
// produce.
func (s *Shard) Write(records []Record) error {
	if len(records) == 0 {
		return nil
	}
	res, err := s.log.Append(buildBatch(records, s.clock.Now()), s.clock.Now())
	if err != nil {
		return fmt.Errorf("appending to the internal topic log: %w", err)
	}
	return s.awaitCommitted(res.LastOffset)
}

// awaitCommitted waits, on the loop, until the replicas hold the shard's
// write up to lastOffset. The loop waits with it: the shard's next change
// is made only once this one is committed, so no answer depends on a
// record that could still be lost with the leader.
func (s *Shard) awaitCommitted(lastOffset int64) error {
	c, ok := s.log.(Committer)
	if !ok {
		return nil
	}
	if err := c.AwaitCommitted(s.ctx, lastOffset); err != nil {
		return fmt.Errorf("waiting for the internal topic's replicas: %w", err)
	}
	return nil
}

// TxnLog is a log that holds transactions as a leader does
// (*storage.Log): a coordinator's transactional batches (no sequence, as
// Kafka's coordinator origin) and the markers that settle them, so the
// internal topic's last stable offset and aborted-transaction index are
// kept like any partition's.
type TxnLog interface {
	AppendAsCoordinator(batch []byte, now time.Time) (storage.AppendResult, error)
	AppendTxnMarker(m storage.TxnMarker, now time.Time) (storage.AppendResult, error)
}

// WriteTransactional appends records as one transactional batch of
// producer (id and epoch): they stay pending until a marker of the same
// producer settles them (TxnOffsetCommit). It runs on the loop.
func (s *Shard) WriteTransactional(producerID int64, epoch int16, records []Record) error {
	if len(records) == 0 {
		return nil
	}
	tl, err := s.txnLog()
	if err != nil {
		return err
	}
	info := BatchInfo{ProducerID: producerID, ProducerEpoch: epoch, Transactional: true}
	res, err := tl.AppendAsCoordinator(buildBatchOf(records, s.clock.Now(), info), s.clock.Now())
	if err != nil {
		return fmt.Errorf("appending to the internal topic log: %w", err)
	}
	return s.awaitCommitted(res.LastOffset)
}

// WriteMarker appends the commit or abort control batch of producer's
// transaction. It runs on the loop.
func (s *Shard) WriteMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	tl, err := s.txnLog()
	if err != nil {
		return err
	}
	m := storage.TxnMarker{ProducerID: producerID, ProducerEpoch: epoch, Commit: commit, CoordinatorEpoch: coordinatorEpoch}
	res, err := tl.AppendTxnMarker(m, s.clock.Now())
	if err != nil {
		return fmt.Errorf("appending a transaction marker to the internal topic log: %w", err)
	}
	return s.awaitCommitted(res.LastOffset)
}

func (s *Shard) txnLog() (TxnLog, error) {
	tl, ok := s.log.(TxnLog)
	if !ok {
		return nil, errors.New("coordinator: this log cannot hold transactional batches")
	}
	return tl, nil
}

// run replays the log, then serves events until stopped.
func (s *Shard) run() {
	defer close(s.done)
	err := s.replay()
	if errors.Is(err, errStoppedLoading) {
		return // unloaded mid-replay: nothing was served, nothing to answer
	}
	if err != nil {
		s.logger.Error("coordinator shard failed to load; requests get COORDINATOR_NOT_AVAILABLE", "partition", s.Partition, "err", err)
		s.failed.Store(true)
		<-s.stop
		return
	}
	s.sm.Loaded()
	s.loaded.Store(true)
	for {
		select {
		case fn := <-s.events:
			fn()
		case <-s.stop:
			s.loaded.Store(false)
			for {
				select {
				case fn := <-s.events:
					fn()
				default:
					s.sm.Unloaded()
					return
				}
			}
		}
	}
}

// replayChunk is how much of the log one read returns at load.
const replayChunk = 1 << 20

// errStoppedLoading ends a replay whose shard was unloaded meanwhile (its
// leadership moved on), as Kafka's loader stops when the leader changes,
// so Unload does not wait for a whole log to be read for nothing.
var errStoppedLoading = errors.New("coordinator: the shard was unloaded while loading")

func (s *Shard) replay() error {
	offset := s.log.LogStartOffset()
	for end := s.log.LogEndOffset(); offset < end; end = s.log.LogEndOffset() {
		if s.ctx.Err() != nil {
			return errStoppedLoading
		}
		res, err := s.log.ReadUpTo(offset, replayChunk, true, end)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) && s.log.LogStartOffset() > offset {
				offset = s.log.LogStartOffset() // compaction or retention moved the start
				continue
			}
			return err
		}
		next, err := forEachRecord(res.Records, func(_ int64, r Record) error { return s.sm.Replay(r) })
		if err != nil {
			return err
		}
		if next <= offset {
			return fmt.Errorf("%w: no progress at offset %d", errBadBatch, offset)
		}
		offset = next
	}
	return nil
}

// close stops the loop and waits for it.
func (s *Shard) close() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.cancel()
	})
	<-s.done
}

// State is the shard's state machine, for code running on its loop.
func (s *Shard) State() StateMachine { return s.sm }

// Logger is the shard's logger.
func (s *Shard) Logger() *slog.Logger { return s.logger }
