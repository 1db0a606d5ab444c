package txn

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/coordinator"
	"kbroker/internal/record"
	"kbroker/internal/storage"
)

// shard is the state of the transactional ids of one `__transaction_state`
// partition. It is touched only on the shard's event loop, except ctx,
// which marker writers watch.
type shard struct {
	c    *Coordinator
	rt   *coordinator.Shard
	txns map[string]*txnMeta
	// coordinatorEpoch is stamped into the markers of this shard.
	coordinatorEpoch int32
	// ctx ends when the shard unloads: marker writers stop retrying, and
	// the next coordinator of the partition completes their work.
	ctx                     context.Context
	cancel                  context.CancelFunc
	abortTimer, expireTimer *coordinator.Timer
	// waiting holds, per transactional id, requests waiting for the markers
	// of its previous transaction (whenSettled).
	waiting map[string][]func()
}

var _ coordinator.StateMachine = (*shard)(nil)

// Replay applies a record of the log; one it cannot read is logged and
// skipped, so that no record keeps the partition's other ids from loading.
func (s *shard) Replay(r coordinator.Record) error {
	if err := s.replay(r); err != nil {
		s.rt.Logger().Warn("skipping an unreadable __transaction_state record", "partition", s.rt.Partition, "err", err)
	}
	return nil
}

// Loaded completes what a previous coordinator left in Prepare*: the
// markers are written again (a partition ignores a marker it already holds
// for that producer and epoch) and Complete* follows, as Kafka's
// TransactionStateManager does at load. It then starts the periodic abort
// of timed-out transactions and expiry of idle ids.
func (s *shard) Loaded() {
	s.coordinatorEpoch = s.c.epochOf(s.rt.Partition)
	for _, m := range s.txns {
		switch m.state {
		case PrepareCommit, PrepareAbort:
			s.completeAsync(m)
		case PrepareEpochFence:
			// A fence whose abort was never written: write it now.
			s.fenceAndAbort(m)
		}
	}
	s.scheduleAbortCheck()
	s.scheduleExpirationCheck()
}

// Unloaded stops the timers and the marker writers.
func (s *shard) Unloaded() {
	s.cancel()
	s.abortTimer.Stop()
	s.expireTimer.Stop()
	// Requests waiting for markers are answered now, as without the wait
	// (CONCURRENT_TRANSACTIONS: the client retries, at the next coordinator).
	for id := range s.waiting {
		s.settled(id)
	}
	s.txns = map[string]*txnMeta{}
}

func (s *shard) now() time.Time { return s.rt.Now() }

// write appends m's record (or, nil, the tombstone of id), mapping a log
// failure as Kafka's coordinators do: NOT_COORDINATOR when the log is gone
// (look the coordinator up again), COORDINATOR_NOT_AVAILABLE otherwise.
func (s *shard) write(rec coordinator.Record) *kerr.Error {
	err := s.rt.Write([]coordinator.Record{rec})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrClosed), errors.Is(err, storage.ErrStorage):
		return kerr.NotCoordinator
	case errors.Is(err, record.ErrMessageTooLarge), errors.Is(err, record.ErrRecordListTooLarge):
		return kerr.UnknownServerError
	}
	return kerr.CoordinatorNotAvailable
}

// transition writes next as the id's metadata and, once written, makes it
// current: a failed write changes nothing.
func (s *shard) transition(m *txnMeta, next txnMeta) *kerr.Error {
	if e := s.write(txnRecord(&next)); e != nil {
		return e
	}
	s.c.stats.observeTransition(m, &next, s.now())
	pending := m.pendingCompletion
	*m = next
	m.pendingCompletion = pending
	s.txns[m.id] = m
	return nil
}

// copyMeta is m with its partitions copied, to build a transition from.
func copyMeta(m *txnMeta) txnMeta {
	n := *m
	n.partitions = make(map[TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		n.partitions[tp] = struct{}{}
	}
	return n
}
