package txn

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitResult is InitProducerId's answer.
type InitResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// InitProducerID serves InitProducerId for a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId, TV1): a new id gets a new
// producer id at epoch 0; an id with no transaction open has its epoch
// bumped, which fences the producer of the previous epoch; an open
// transaction is fenced and aborted, and the caller is told
// CONCURRENT_TRANSACTIONS so that its retry bumps again once the abort is
// done. expectedPID and expectedEpoch (-1, -1 when absent) are KIP-360's:
// a producer recovering from an error names its current producer.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMillis int32, expectedPID int64, expectedEpoch int16) InitResult {
	fail := func(e *kerr.Error) InitResult { return InitResult{ProducerID: -1, Epoch: -1, Err: e} }
	if id == "" {
		return fail(kerr.InvalidRequest)
	}
	if timeoutMillis <= 0 || time.Duration(timeoutMillis)*time.Millisecond > c.cfg.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout)
	}
	// A new producer id comes from the metadata store, which may be slow:
	// it is reserved off the shard's loop when the loop says one is
	// needed, and the call is made again with it.
	newPID := int64(-1)
	for {
		res, errc := call(ctx, c, id, func(s *shard, done func(InitResult)) {
			done(s.initProducerID(id, time.Duration(timeoutMillis)*time.Millisecond, expectedPID, expectedEpoch, newPID))
		})
		switch {
		case errc != nil:
			return fail(errc)
		case res.Err != errNeedProducerID:
			return res
		case newPID >= 0:
			return fail(kerr.CoordinatorNotAvailable) // cannot happen: one id is enough
		}
		pid, err := c.ids.Next(ctx)
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable)
		}
		newPID = pid
	}
}

// errNeedProducerID is initProducerID's answer when it needs a producer id
// it was not given; it never reaches a client.
var errNeedProducerID = &kerr.Error{Message: "kbroker: a new producer id is needed", Code: -2}

// initProducerID is InitProducerID on the loop; newPID, if not -1, is a
// fresh producer id to use should one be needed.
func (s *shard) initProducerID(id string, timeout time.Duration, expectedPID int64, expectedEpoch int16, newPID int64) InitResult {
	fail := func(e *kerr.Error) InitResult { return InitResult{ProducerID: -1, Epoch: -1, Err: e} }
	expected := expectedPID != -1 || expectedEpoch != -1
	m := s.txns[id]
	if m == nil {
		if newPID < 0 {
			return fail(errNeedProducerID)
		}
		pid := newPID
		newPID = -1
		m = &txnMeta{id: id, producerID: pid, prevProducerID: -1, epoch: noEpoch, lastEpoch: noEpoch,
			timeout: timeout, state: Empty, partitions: map[TopicPartition]struct{}{}, lastUpdate: s.now()}
		s.txns[id] = m // as Kafka caches it: a failed write leaves an id at no epoch
	}
	if m.pendingCompletion {
		return fail(kerr.ConcurrentTransactions)
	}
	// KIP-360: a named producer must be the current one, unless the id was
	// just created, or it is the previous producer id whose epoch ran out
	// (a retry of the rotation that answered it).
	if expected && !(m.epoch == noEpoch || m.producerID == expectedPID ||
		(m.prevProducerID == expectedPID && epochExhausted(expectedEpoch))) {
		return fail(kerr.ProducerFenced)
	}
	switch m.state {
	case PrepareCommit, PrepareAbort, PrepareEpochFence:
		return fail(kerr.ConcurrentTransactions)
	case Ongoing:
		s.fenceAndAbort(m)
		return fail(kerr.ConcurrentTransactions)
	case Dead:
		return fail(kerr.ConcurrentTransactions)
	}
	next := copyMeta(m)
	if epochExhausted(m.epoch) && (!expected || expectedEpoch == m.epoch) {
		if newPID < 0 {
			return fail(errNeedProducerID)
		}
		pid := newPID
		next.prevProducerID, next.producerID, next.epoch, next.lastEpoch = m.producerID, pid, 0, noEpoch
		if expected {
			next.lastEpoch = m.epoch
		}
	} else {
		switch {
		case !expected:
			next.epoch, next.lastEpoch = m.epoch+1, noEpoch
		case m.epoch == noEpoch || expectedEpoch == m.epoch:
			next.epoch, next.lastEpoch = m.epoch+1, m.epoch
		case expectedEpoch == m.lastEpoch:
			// A retry of a bump that succeeded: the same answer again.
		default:
			return fail(kerr.ProducerFenced)
		}
	}
	next.timeout, next.state, next.start, next.lastUpdate = timeout, Empty, time.Time{}, s.now()
	next.partitions = map[TopicPartition]struct{}{}
	next.hasFailedEpochFence = false
	if e := s.transition(m, next); e != nil {
		return fail(e)
	}
	return InitResult{ProducerID: m.producerID, Epoch: m.epoch}
}

// checkProducer is the check every client call after InitProducerId
// starts with: the id and producer must be the current ones
// (INVALID_PRODUCER_ID_MAPPING), at the current epoch (PRODUCER_FENCED),
// with no completion in flight (CONCURRENT_TRANSACTIONS).
func (s *shard) checkProducer(id string, pid int64, epoch int16) (*txnMeta, *kerr.Error) {
	m := s.txns[id]
	switch {
	case m == nil || m.producerID != pid:
		return nil, kerr.InvalidProducerIDMapping
	case m.epoch != epoch:
		return nil, kerr.ProducerFenced
	case m.pendingCompletion:
		return nil, kerr.ConcurrentTransactions
	}
	return m, nil
}

// AddPartitions adds partitions to id's transaction (AddPartitionsToTxn
// v0-v3, and AddOffsetsToTxn with the group's offsets partition), opening
// it if none is: Ongoing, its timeout counted from now.
//
// A producer that begins its next transaction while the markers of the
// last one are still being written is held until they are in (at most
// settleWait) rather than told CONCURRENT_TRANSACTIONS at once: Kafka
// answers that, and clients back off for 20 ms or more, which a
// transaction of a few milliseconds pays at almost every commit.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, partitions []TopicPartition) *kerr.Error {
	e, errc := call(ctx, c, id, func(s *shard, done func(*kerr.Error)) {
		s.whenSettled(id, func() { done(s.addPartitions(id, pid, epoch, partitions)) })
	})
	if errc != nil {
		return errc
	}
	return e
}

func (s *shard) addPartitions(id string, pid int64, epoch int16, partitions []TopicPartition) *kerr.Error {
	m, e := s.checkProducer(id, pid, epoch)
	if e != nil {
		return e
	}
	switch m.state {
	case PrepareCommit, PrepareAbort, PrepareEpochFence:
		return kerr.ConcurrentTransactions
	case Dead:
		return kerr.InvalidTxnState
	}
	if m.state == Ongoing {
		missing := false
		for _, tp := range partitions {
			if _, ok := m.partitions[tp]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			return nil // nothing new: nothing to write
		}
	}
	next := copyMeta(m)
	for _, tp := range partitions {
		next.partitions[tp] = struct{}{}
	}
	if m.state != Ongoing {
		next.state, next.start = Ongoing, s.now()
	}
	next.lastUpdate = s.now()
	return s.transition(m, next)
}

// Verify is KIP-890 part 1's check, AddPartitionsToTxn v4+ with
// VerifyOnly: is each partition in id's ongoing transaction? The error is
// the transaction's own (the producer is not the current one), else one
// per partition: nil, or INVALID_TXN_STATE for a partition not added.
func (c *Coordinator) Verify(ctx context.Context, id string, pid int64, epoch int16, partitions []TopicPartition) (*kerr.Error, []*kerr.Error) {
	type answer struct {
		top   *kerr.Error
		parts []*kerr.Error
	}
	a, errc := call(ctx, c, id, func(s *shard, done func(answer)) {
		m, e := s.checkProducer(id, pid, epoch)
		if e != nil {
			done(answer{top: e})
			return
		}
		parts := make([]*kerr.Error, len(partitions))
		for i, tp := range partitions {
			if _, ok := m.partitions[tp]; !ok || m.state != Ongoing {
				parts[i] = kerr.InvalidTxnState
			}
		}
		done(answer{parts: parts})
	})
	if errc != nil {
		return errc, nil
	}
	return a.top, a.parts
}

// VerifyPartition is the Produce path's hook for KIP-890 part 1: nil if
// topic/partition is in the ongoing transaction of id at producer id and
// epoch, else the error the produce gets: INVALID_PRODUCER_EPOCH for
// another epoch, INVALID_TXN_STATE for a partition not added or a
// producer that is not the id's, CONCURRENT_TRANSACTIONS (retriable: the
// produce path should answer the producer a retriable code) while the
// previous transaction completes, and the coordinator's lookup errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
func (c *Coordinator) VerifyPartition(ctx context.Context, id string, pid int64, epoch int16, topic string, partition int32) error {
	top, parts := c.Verify(ctx, id, pid, epoch, []TopicPartition{{topic, partition}})
	switch top {
	case nil:
		if parts[0] != nil {
			return parts[0]
		}
		return nil
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.InvalidProducerIDMapping:
		return kerr.InvalidTxnState
	}
	return top
}

// EndTxn ends id's transaction (Kafka's handleEndTransaction, TV1): from
// Ongoing, PrepareCommit or PrepareAbort is written and answered; the
// markers then go to every partition of the transaction and
// CompleteCommit or CompleteAbort follows. A retry after completion is
// answered as the first was; one while the markers are in flight gets
// CONCURRENT_TRANSACTIONS; the other outcome, or no transaction open, is
// INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) *kerr.Error {
	e, errc := call(ctx, c, id, func(s *shard, done func(*kerr.Error)) {
		done(s.endTxn(id, pid, epoch, commit))
	})
	if errc != nil {
		return errc
	}
	return e
}

func (s *shard) endTxn(id string, pid int64, epoch int16, commit bool) *kerr.Error {
	m := s.txns[id]
	switch {
	case m == nil || m.producerID != pid:
		return kerr.InvalidProducerIDMapping
	case m.epoch != epoch:
		return kerr.ProducerFenced
	case m.pendingCompletion:
		if (m.state == PrepareCommit) == commit {
			return kerr.ConcurrentTransactions
		}
		return kerr.InvalidTxnState
	}
	switch m.state {
	case Ongoing:
		next := copyMeta(m)
		next.state, next.lastUpdate = PrepareAbort, s.now()
		if commit {
			next.state = PrepareCommit
		}
		if e := s.transition(m, next); e != nil {
			return e
		}
		s.completeAsync(m)
		return nil
	case CompleteCommit:
		return okIf(commit)
	case CompleteAbort:
		return okIf(!commit)
	case PrepareCommit:
		if commit {
			return kerr.ConcurrentTransactions
		}
	case PrepareAbort:
		if !commit {
			return kerr.ConcurrentTransactions
		}
	}
	return kerr.InvalidTxnState
}

func okIf(same bool) *kerr.Error {
	if same {
		return nil
	}
	return kerr.InvalidTxnState
}
