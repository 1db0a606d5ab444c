package txn

import (
	"context"
	"errors"
	"sync"
	"time"
)

// markerRetryBackoff is how long a failed marker write waits before it is
// tried again; Kafka's marker channel retries until the partition takes it
// or is gone.
const markerRetryBackoff = 100 * time.Millisecond

// completeAsync writes the markers of m's prepared transaction off the
// loop, then CompleteCommit or CompleteAbort on it. Until then every other
// transition of the id answers CONCURRENT_TRANSACTIONS.
//
// Every partition's marker goes out at once (Kafka's marker channel sends
// to all leaders in parallel): the loop hands the transaction to one
// worker, which writes the first marker itself and gives each other one to
// a worker of its own, so the loop wakes a single goroutine before it
// answers. The last marker written hands Complete* to the loop, together
// with its partition's removal; no goroutine waits for the others.
func (s *shard) completeAsync(m *txnMeta) {
	m.pendingCompletion = true
	commit := m.state == PrepareCommit
	pid, epoch, coordEpoch := m.producerID, m.epoch, s.coordinatorEpoch
	partitions := m.sortedPartitions()
	ctx := s.ctx
	var (
		mu       sync.Mutex
		left     = len(partitions)
		gone     []TopicPartition
		unloaded bool
	)
	write := func(tp TopicPartition) {
		mk := Marker{Topic: tp.Topic, Partition: tp.Partition, ProducerID: pid, ProducerEpoch: epoch, Commit: commit, CoordinatorEpoch: coordEpoch}
		err := s.writeMarker(ctx, mk)
		mu.Lock()
		switch {
		case err == nil:
		case errors.Is(err, ErrPartitionGone):
			gone = append(gone, tp)
		default:
			unloaded = true // the next coordinator completes it
		}
		left--
		last, lastGone, anyUnloaded := left == 0, gone, unloaded
		mu.Unlock()
		_ = s.rt.Do(func() {
			// As Kafka does, a partition holding its marker leaves the
			// transaction: DescribeTransactions then lists those still
			// waiting for theirs. The last marker's event may run before
			// this one, and the producer's next transaction (at another
			// epoch under TV2) may be completing by then.
			if err == nil && s.txns[m.id] == m && m.pendingCompletion && m.producerID == pid && m.epoch == epoch {
				delete(m.partitions, tp)
			}
			if last && !anyUnloaded {
				s.finishCompletion(m, commit, lastGone)
			}
		})
	}
	s.c.workers.run(func() {
		if len(partitions) == 0 {
			_ = s.rt.Do(func() { s.finishCompletion(m, commit, nil) })
			return
		}
		for _, tp := range partitions[1:] {
			s.c.workers.run(func() { write(tp) })
		}
		write(partitions[0])
	})
}

// writeMarker retries one marker until it is written, its partition is
// gone, or the shard unloads.
func (s *shard) writeMarker(ctx context.Context, mk Marker) error {
	for {
		err := s.c.markers(ctx, mk)
		if err == nil || errors.Is(err, ErrPartitionGone) {
			return err
		}
		s.rt.Logger().Debug("retrying a transaction marker", "topic", mk.Topic, "partition", mk.Partition, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(markerRetryBackoff):
		}
	}
}

// finishCompletion writes Complete* once every marker is in; a failed
// write is retried after a back-off.
func (s *shard) finishCompletion(m *txnMeta, commit bool, gone []TopicPartition) {
	if s.txns[m.id] != m || !m.pendingCompletion {
		return
	}
	for _, tp := range gone {
		delete(m.partitions, tp)
	}
	next := copyMeta(m)
	next.state = CompleteAbort
	if commit {
		next.state = CompleteCommit
	}
	next.partitions, next.start, next.lastUpdate = map[TopicPartition]struct{}{}, time.Time{}, s.now()
	if m.clientTV >= TV2 && m.nextProducerID >= 0 {
		// The epoch ran out: the markers were written at the last epoch
		// of the old producer id, and the producer goes on with the new
		// one (Kafka's prepareComplete).
		next.prevProducerID, next.producerID, next.epoch, next.lastEpoch = m.producerID, m.nextProducerID, 0, m.epoch
		next.nextProducerID = -1
	}
	if e := s.transition(m, next); e != nil {
		s.rt.Logger().Warn("could not record a transaction's completion; retrying", "transactional_id", m.id, "err", e.Message)
		s.rt.After(markerRetryBackoff, func() { s.finishCompletion(m, commit, nil) })
		return
	}
	m.pendingCompletion = false
	s.settled(m.id)
}

// settleWait bounds how long a request waits for the markers of the
// previous transaction before it is answered as Kafka would
// (CONCURRENT_TRANSACTIONS): markers usually take a millisecond or two.
const settleWait = 100 * time.Millisecond

// whenSettled runs fn now, or, while id's previous transaction is still
// writing its markers, once Complete* is written or settleWait has passed,
// whichever comes first. It runs on the loop, and so does fn.
func (s *shard) whenSettled(id string, fn func()) {
	m := s.txns[id]
	if m == nil || !m.pendingCompletion || (m.state != PrepareCommit && m.state != PrepareAbort) {
		fn()
		return
	}
	ran := false
	once := func() {
		if !ran {
			ran = true
			fn()
		}
	}
	if s.waiting == nil {
		s.waiting = map[string][]func(){}
	}
	s.waiting[id] = append(s.waiting[id], once)
	s.rt.After(settleWait, once)
}

// settled runs what waited for id's markers.
func (s *shard) settled(id string) {
	ws := s.waiting[id]
	delete(s.waiting, id)
	for _, fn := range ws {
		fn()
	}
}

// fenceAndAbort is Kafka's prepareFenceProducerEpoch followed by an abort
// from the coordinator: the epoch is bumped, so the producer of the
// transaction is fenced (its next request gets PRODUCER_FENCED, its
// batches INVALID_PRODUCER_EPOCH), and PrepareAbort is written at the new
// epoch, whose markers then abort the transaction.
func (s *shard) fenceAndAbort(m *txnMeta) {
	next := copyMeta(m)
	if !m.hasFailedEpochFence {
		if m.epoch == 1<<15-1 {
			s.rt.Logger().Error("cannot fence a producer at the largest epoch", "transactional_id", m.id)
			return
		}
		next.epoch = m.epoch + 1
	}
	next.lastEpoch, next.state, next.lastUpdate = noEpoch, PrepareAbort, s.now()
	if m.clientTV >= TV2 && next.epoch < 1<<15-1 {
		// Under TV2 the abort bumps the epoch once more, as every Prepare*
		// does (Kafka's endTransaction after prepareFenceProducerEpoch): the
		// fenced producer's EndTxn, one epoch behind the fence, would
		// otherwise pass for a retry of this abort.
		next.lastEpoch, next.epoch = next.epoch, next.epoch+1
	}
	if e := s.transition(m, next); e != nil {
		// Kafka remembers the failed fence so that the retry does not bump
		// the epoch a second time.
		m.hasFailedEpochFence = true
		s.rt.Logger().Warn("could not fence a transaction", "transactional_id", m.id, "err", e.Message)
		return
	}
	m.hasFailedEpochFence = false
	s.completeAsync(m)
}

// scheduleAbortCheck aborts, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, the ongoing
// transactions older than their timeout (Kafka's
// abortTimedOutTransactions).
func (s *shard) scheduleAbortCheck() {
	if s.c.cfg.AbortCheck <= 0 {
		return
	}
	s.abortTimer = s.rt.After(s.c.cfg.AbortCheck, func() {
		s.abortTimedOut()
		s.scheduleAbortCheck()
	})
}

func (s *shard) abortTimedOut() {
	now := s.now()
	for _, m := range s.txns {
		if m.state == Ongoing && !m.pendingCompletion && m.start.Add(m.timeout).Before(now) {
			s.rt.Logger().Info("aborting a transaction past its timeout", "transactional_id", m.id, "producer_id", m.producerID, "epoch", m.epoch)
			s.fenceAndAbort(m)
			s.c.stats.observeTimedOutAbort(m)
		}
	}
}

// scheduleExpirationCheck removes, every
// transaction.remove.expired.transaction.cleanup.interval.ms, the ids with
// no transaction open that were last used longer than
// transactional.id.expiration.ms ago: a tombstone is written, and the id
// starts afresh next time.
func (s *shard) scheduleExpirationCheck() {
	if s.c.cfg.ExpirationCheck <= 0 || s.c.cfg.IDExpiration <= 0 {
		return
	}
	s.expireTimer = s.rt.After(s.c.cfg.ExpirationCheck, func() {
		s.expireIdle()
		s.scheduleExpirationCheck()
	})
}

func (s *shard) expireIdle() {
	cutoff := s.now().Add(-s.c.cfg.IDExpiration)
	for id, m := range s.txns {
		switch m.state {
		case Empty, CompleteCommit, CompleteAbort:
		default:
			continue
		}
		if m.pendingCompletion || m.lastUpdate.After(cutoff) {
			continue
		}
		if e := s.write(txnTombstone(id)); e != nil {
			s.rt.Logger().Warn("could not expire a transactional id", "transactional_id", id, "err", e.Message)
			continue
		}
		m.state = Dead
		delete(s.txns, id)
	}
}
