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
		m = &txnMeta{id: id, producerID: pid, prevProducerID: -1, nextProducerID: -1, epoch: noEpoch, lastEpoch: noEpoch,
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
	// Kafka's InitProducerId writes its record at TV0: the producer's
	// next EndTxn says which version its transaction runs.
	next.nextProducerID, next.clientTV = -1, TV1
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
	return c.AddPartitionsAt(ctx, id, pid, epoch, partitions, TV1)
}

// AddPartitionsAt is AddPartitions by a request of transaction version tv:
// TV2 for the implicit adds of KIP-890 part 2 (AddPartitionsToTxn v5
// without VerifyOnly, which a partition leader sends for Produce v12+).
func (c *Coordinator) AddPartitionsAt(ctx context.Context, id string, pid int64, epoch int16, partitions []TopicPartition, tv int16) *kerr.Error {
	e, errc := call(ctx, c, id, func(s *shard, done func(*kerr.Error)) {
		s.whenSettled(id, func() { done(s.addPartitions(id, pid, epoch, partitions, tv)) })
	})
	if errc != nil {
		return errc
	}
	return e
}

func (s *shard) addPartitions(id string, pid int64, epoch int16, partitions []TopicPartition, tv int16) *kerr.Error {
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
	next.lastUpdate, next.clientTV = s.now(), tv
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

// VerifyPartition is VerifyPartitions for one partition (TxnOffsetCommit's
// offsets partition).
func (c *Coordinator) VerifyPartition(ctx context.Context, id string, pid int64, epoch int16, topic string, partition int32, add bool) error {
	return c.VerifyPartitions(ctx, id, pid, epoch, []TopicPartition{{topic, partition}}, add)[0]
}

// VerifyPartitions is the Produce and TxnOffsetCommit paths' hook for
// KIP-890, for every partition of one request at once: per partition, nil
// if it is in the ongoing transaction of id at producer id and epoch, else
// the error the write gets: INVALID_PRODUCER_EPOCH for another epoch,
// INVALID_TXN_STATE for a partition not added or a producer that is not
// the id's, CONCURRENT_TRANSACTIONS (retriable) while the previous
// transaction completes, and the coordinator's lookup errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...). With add (TV2:
// Produce v12+, TxnOffsetCommit v5+) the partitions are added to the
// transaction instead of checked, opening it if none is, as Kafka's
// produce path does with AddPartitionsToTxn VerifyOnly=false. The
// partitions of a request go to the coordinator together, as Kafka's
// AddPartitionsToTxnManager batches them: one trip to the shard's loop
// and, for an add, one `__transaction_state` write for all of them.
func (c *Coordinator) VerifyPartitions(ctx context.Context, id string, pid int64, epoch int16, partitions []TopicPartition, add bool) []error {
	var top *kerr.Error
	var parts []*kerr.Error
	if add {
		top = c.AddPartitionsAt(ctx, id, pid, epoch, partitions, TV2)
	} else {
		top, parts = c.Verify(ctx, id, pid, epoch, partitions)
	}
	switch top {
	case kerr.ProducerFenced:
		top = kerr.InvalidProducerEpoch
	case kerr.InvalidProducerIDMapping:
		top = kerr.InvalidTxnState
	}
	errs := make([]error, len(partitions))
	for i := range errs {
		switch {
		case top != nil:
			errs[i] = top
		case i < len(parts) && parts[i] != nil:
			errs[i] = parts[i]
		}
	}
	return errs
}

// EndResult is EndTxn's answer: on success the producer id and epoch the
// producer goes on with (under TV2 the bumped epoch, or a new producer id
// at epoch 0 once the epoch ran out; under TV1 the request's own).
type EndResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// EndTxn ends id's transaction (Kafka's handleEndTransaction): from
// Ongoing, PrepareCommit or PrepareAbort is written and answered; the
// markers then go to every partition of the transaction and
// CompleteCommit or CompleteAbort follows. A retry after completion is
// answered as the first was; one while the markers are in flight gets
// CONCURRENT_TRANSACTIONS; the other outcome, or no transaction open, is
// INVALID_TXN_STATE. tv is the request's transaction version (TV2 for
// EndTxn v5+): under TV2 Prepare* bumps the epoch (the markers carry the
// bumped one), a retry is recognised by being one epoch behind (or, after
// an epoch overflow, by naming the previous producer id at the last
// epoch), and aborting with no transaction open is allowed (it bumps the
// epoch too).
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool, tv int16) EndResult {
	newPID := int64(-1)
	for {
		res, errc := call(ctx, c, id, func(s *shard, done func(EndResult)) {
			done(s.endTxn(id, pid, epoch, commit, tv, newPID))
		})
		switch {
		case errc != nil:
			return EndResult{ProducerID: -1, Epoch: -1, Err: errc}
		case res.Err != errNeedProducerID:
			return res
		case newPID >= 0:
			return EndResult{ProducerID: -1, Epoch: -1, Err: kerr.CoordinatorNotAvailable}
		}
		next, err := c.ids.Next(ctx)
		if err != nil {
			return EndResult{ProducerID: -1, Epoch: -1, Err: kerr.CoordinatorNotAvailable}
		}
		newPID = next
	}
}

func (s *shard) endTxn(id string, pid int64, epoch int16, commit bool, tv int16, newPID int64) EndResult {
	fail := func(e *kerr.Error) EndResult { return EndResult{ProducerID: -1, Epoch: -1, Err: e} }
	m := s.txns[id]
	if m == nil {
		return fail(kerr.InvalidProducerIDMapping)
	}
	// Under TV2 a Prepare* or Complete* one epoch ahead of the request is
	// the result of that very request, retried; so is, after an overflow,
	// the new producer id at epoch 0 for the previous one at the last
	// epoch a client may have (Kafka's retryOnEpochBump, retryOnOverflow).
	storedTV2 := m.clientTV >= TV2
	retryOnBump := storedTV2 && m.producerID == pid && int32(m.epoch) == int32(epoch)+1
	retryOnOverflow := storedTV2 && m.prevProducerID == pid && epoch == 1<<15-2 && m.epoch == 0 && m.producerID != pid
	retry := false
	switch m.state {
	case PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort:
		retry = retryOnBump || (retryOnOverflow && (m.state == CompleteCommit || m.state == CompleteAbort))
	}
	switch {
	case m.producerID != pid && !retry:
		return fail(kerr.InvalidProducerIDMapping)
	case m.epoch != epoch && !retry:
		return fail(kerr.ProducerFenced)
	case m.pendingCompletion:
		// Under TV2 a request at the bumped epoch is for the next
		// transaction (a client that ends at once, e.g. aborting after a
		// TxnOffsetCommit that was told to wait): it waits too.
		if (m.state == PrepareCommit) == commit || (storedTV2 && !retry) {
			return fail(kerr.ConcurrentTransactions)
		}
		return fail(kerr.InvalidTxnState)
	}
	ok := func() EndResult { return EndResult{ProducerID: m.producerID, Epoch: m.epoch} }
	switch m.state {
	case Ongoing:
		return s.prepareEnd(m, commit, tv, newPID)
	case CompleteCommit, CompleteAbort:
		if retry {
			if (m.state == CompleteCommit) == commit {
				return ok()
			}
			return fail(kerr.InvalidTxnState)
		}
		if tv >= TV2 && !commit {
			return s.prepareEnd(m, false, tv, newPID) // an empty abort
		}
		if !storedTV2 && (m.state == CompleteCommit) == commit {
			return ok() // TV1: the same epoch again is a retry
		}
	case Empty:
		if tv >= TV2 && !commit {
			return s.prepareEnd(m, false, tv, newPID)
		}
	case PrepareCommit:
		if commit {
			return fail(kerr.ConcurrentTransactions)
		}
	case PrepareAbort:
		if !commit {
			return fail(kerr.ConcurrentTransactions)
		}
	}
	return fail(kerr.InvalidTxnState)
}

// prepareEnd writes PrepareCommit or PrepareAbort for m and starts the
// markers. Under TV2 the epoch is bumped first; if the current epoch is
// exhausted the transaction also takes a new producer id (newPID, asked
// for with errNeedProducerID), which becomes current at Complete*.
func (s *shard) prepareEnd(m *txnMeta, commit bool, tv int16, newPID int64) EndResult {
	next := copyMeta(m)
	next.state, next.lastUpdate, next.clientTV = PrepareAbort, s.now(), tv
	if commit {
		next.state = PrepareCommit
	}
	next.nextProducerID = -1
	if tv >= TV2 {
		if epochExhausted(m.epoch) {
			if newPID < 0 {
				return EndResult{ProducerID: -1, Epoch: -1, Err: errNeedProducerID}
			}
			next.nextProducerID = newPID
		}
		next.epoch, next.lastEpoch = m.epoch+1, m.epoch
	}
	if m.state != Ongoing {
		// An empty abort: a transaction with no partitions, begun now.
		next.partitions, next.start = map[TopicPartition]struct{}{}, s.now()
	}
	if e := s.transition(m, next); e != nil {
		return EndResult{ProducerID: -1, Epoch: -1, Err: e}
	}
	s.completeAsync(m)
	if m.nextProducerID >= 0 {
		// What Complete* will hold: the producer goes on with the new id.
		return EndResult{ProducerID: m.nextProducerID, Epoch: 0}
	}
	return EndResult{ProducerID: m.producerID, Epoch: m.epoch}
}
