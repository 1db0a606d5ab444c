package storage

import (
	"fmt"
	"math"
	"sort"

	"kbroker/internal/record"
)

// batchesToRetain is how many recent batches per producer are remembered for
// duplicate detection: Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN, matching
// the client's max.in.flight.requests.per.connection limit of 5 for idempotence.
const batchesToRetain = 5

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTimestamp            int64
}

// producerEntry is one producer id's state in one partition.
type producerEntry struct {
	epoch   int16
	batches []batchMeta // oldest first, at most batchesToRetain
	// coordinatorEpoch is the epoch of the transaction coordinator that
	// wrote this producer's last marker (-1: none yet); a marker from an
	// older coordinator is fenced.
	coordinatorEpoch int32
	// txnFirst is the first offset of the producer's ongoing transaction,
	// -1 when none: the last stable offset stays at or below it.
	txnFirst int64
	// markerOffset is the offset of the producer's last marker (-1: none),
	// which keeps an entry whose batches a marker's epoch bump forgot.
	markerOffset int64
	// lastTimestamp is the max timestamp of its last batch or marker
	// (DescribeProducers' LastTimestamp, producer.id.expiration.ms).
	lastTimestamp int64
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordinatorEpoch: -1, txnFirst: -1, markerOffset: -1, lastTimestamp: -1}
}

// lastOffset is the last offset of its last data batch (-1: none), what the
// cleaner keeps so the producer's sequence survives.
func (e *producerEntry) lastOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// completedTxn is a transaction whose marker is in the log: Kafka's
// CompletedTxn. Until the high watermark passes the marker (lastOffset) it
// still holds the last stable offset back, as Kafka's unreplicated
// transactions do.
type completedTxn struct {
	producerID              int64
	firstOffset, lastOffset int64
	aborted                 bool
}

// producerState is the ProducerStateManager of one partition: idempotent
// producers' sequences and epochs, and their transactions. It is only
// touched under the Log's appendMu.
type producerState struct {
	producers map[int64]*producerEntry
	// ongoing maps each producer with an open transaction to its first
	// offset (the same as its entry's txnFirst), so the last stable offset
	// is found without visiting every producer.
	ongoing map[int64]int64
	// txnsChanged is set whenever ongoing or unreplicated change: the log
	// then recomputes its first unstable offset.
	txnsChanged bool
	// unreplicated are completed transactions whose marker is at or past the
	// high watermark, oldest first.
	unreplicated []completedTxn
	// guards are the verification guards handed out and not yet used
	// (StartVerification), by producer; a marker or the start of the
	// producer's transaction removes its guard. They live in memory only:
	// after a restart a produce verifies again.
	guards   map[int64]VerificationGuard
	guardSeq uint64
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry), ongoing: make(map[int64]int64),
		guards: make(map[int64]VerificationGuard)}
}

// firstUnstableOffset is the first offset of the earliest transaction not
// yet stable (ongoing, or completed above the high watermark), or
// math.MaxInt64 when there is none: Kafka's firstUnstableOffset.
func (ps *producerState) firstUnstableOffset() int64 {
	first := int64(math.MaxInt64)
	for _, f := range ps.ongoing {
		first = min(first, f)
	}
	for _, t := range ps.unreplicated {
		first = min(first, t.firstOffset)
	}
	return first
}

// nextIncompleteTxn is the first offset of the earliest ongoing transaction
// of a producer other than pid, or -1: what an aborted-transaction index
// entry records as the last stable offset (ProducerStateManager.lastStableOffset).
func (ps *producerState) nextIncompleteTxn(pid int64) int64 {
	first := int64(-1)
	for id, f := range ps.ongoing {
		if id != pid && (first < 0 || f < first) {
			first = f
		}
	}
	return first
}

// onHighWatermark forgets the completed transactions whose marker is below
// hw: they no longer hold the last stable offset back.
func (ps *producerState) onHighWatermark(hw int64) {
	if len(ps.unreplicated) == 0 {
		return
	}
	n := 0
	for _, t := range ps.unreplicated {
		if t.lastOffset >= hw {
			ps.unreplicated[n] = t
			n++
		}
	}
	if n != len(ps.unreplicated) {
		ps.txnsChanged = true
	}
	ps.unreplicated = ps.unreplicated[:n]
}

// findDuplicate reports a retry of one of the last batches written by this
// producer in the same epoch (Kafka's ProducerStateEntry.findDuplicateBatch: same
// epoch and the same first and last sequence).
func (ps *producerState) findDuplicate(pid int64, epoch int16, firstSeq, lastSeq int32) (batchMeta, bool) {
	e := ps.producers[pid]
	if e == nil || e.epoch != epoch {
		return batchMeta{}, false
	}
	for _, b := range e.batches {
		if b.firstSeq == firstSeq && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return batchMeta{}, false
}

// check validates a new data batch's epoch, sequence and transactional
// state the way Kafka 4's ProducerAppendInfo does for client appends:
//   - an epoch below the current one is fenced (INVALID_PRODUCER_EPOCH);
//   - a new epoch must start at sequence 0, unless the producer is unknown here;
//   - within an epoch the first sequence must follow the last one (wrapping at
//     int32 max to 0); after a marker that bumped the epoch, there is no last
//     one and the next batch starts at 0;
//   - a producer with no state (never seen, or its batches all removed by
//     retention) may start at any sequence: Kafka stopped returning
//     UNKNOWN_PRODUCER_ID for this (KIP-360);
//   - a non-transactional batch from a producer with an ongoing transaction
//     is INVALID_TXN_STATE; a transactional one starts or continues it.
func (ps *producerState) check(pid int64, epoch int16, firstSeq int32, offset int64, transactional bool) error {
	e := ps.producers[pid]
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, pid, offset, epoch, e.epoch)
	}
	if epoch != e.epoch {
		if firstSeq != 0 {
			return fmt.Errorf("%w: invalid sequence number for new epoch %d of producer %d: %d (expected 0), current epoch %d",
				ErrOutOfOrderSequence, epoch, pid, firstSeq, e.epoch)
		}
	} else if last := e.lastSeq(); !inSequence(last, firstSeq) {
		return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
			ErrOutOfOrderSequence, pid, offset, firstSeq, last)
	}
	if e.txnFirst >= 0 && !transactional {
		return fmt.Errorf("%w: expected transactional write from producer %d at offset %d", ErrInvalidTxnState, pid, offset)
	}
	return nil
}

// checkCoordinatorBatch is check for a batch without a sequence that a
// coordinator writes for a producer: only its epoch and transactional
// state are checked, as Kafka's ProducerAppendInfo does for the
// coordinator's origin.
func (ps *producerState) checkCoordinatorBatch(pid int64, epoch int16, offset int64, transactional bool) error {
	e := ps.producers[pid]
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, pid, offset, epoch, e.epoch)
	}
	if e.txnFirst >= 0 && !transactional {
		return fmt.Errorf("%w: expected transactional write from producer %d at offset %d", ErrInvalidTxnState, pid, offset)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == 1<<31-1)
}

// update records a written data batch. A new epoch forgets the old epoch's
// batches. A transactional batch starts the producer's transaction unless
// one is ongoing.
func (ps *producerState) update(pid int64, epoch int16, m batchMeta, transactional bool) {
	e := ps.producers[pid]
	if e == nil {
		e = newProducerEntry(epoch)
		ps.producers[pid] = e
	}
	if e.epoch != epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == batchesToRetain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:batchesToRetain-1]
	}
	e.batches = append(e.batches, m)
	e.lastTimestamp = m.maxTimestamp
	if transactional && e.txnFirst < 0 {
		delete(ps.guards, pid) // verified: the transaction is open here now
		e.txnFirst = m.firstOffset
		ps.ongoing[pid] = m.firstOffset
		ps.txnsChanged = true
	}
}

// checkMarker validates a transaction marker from a coordinator
// (ProducerAppendInfo.appendEndTxnMarker for the coordinator's origin): its
// producer epoch may not be below the producer's (INVALID_PRODUCER_EPOCH;
// it may be above: a coordinator that fenced the producer, or Transactions
// V2, bumps it), nor its coordinator epoch below the last marker's
// (TRANSACTION_COORDINATOR_FENCED: a coordinator that lost its partition).
func (ps *producerState) checkMarker(pid int64, epoch int16, coordinatorEpoch int32, offset int64) error {
	e := ps.producers[pid]
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, pid, offset, epoch, e.epoch)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: invalid coordinator epoch for producerId %d at offset %d: %d (zombie), %d (current)",
			ErrTransactionCoordinatorFenced, pid, offset, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// endTxn records a marker at offset: the producer's ongoing transaction, if
// any, is completed (returned, ok true; a marker of a producer with no data
// since its last marker completes nothing, as in Kafka, and touches neither
// the last stable offset nor the transaction index). A higher epoch is
// taken, forgetting the old epoch's batches.
func (ps *producerState) endTxn(pid int64, epoch int16, mk record.Marker, offset, timestamp int64) (completedTxn, bool) {
	e := ps.producers[pid]
	if e == nil {
		e = newProducerEntry(epoch)
		ps.producers[pid] = e
	}
	if e.epoch != epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	e.coordinatorEpoch, e.markerOffset, e.lastTimestamp = mk.CoordinatorEpoch, offset, timestamp
	// A verification made before this marker is for the transaction it
	// ends: an append carrying it must not open a new one.
	delete(ps.guards, pid)
	if e.txnFirst < 0 {
		return completedTxn{}, false
	}
	t := completedTxn{producerID: pid, firstOffset: e.txnFirst, lastOffset: offset, aborted: !mk.Commit}
	e.txnFirst = -1
	delete(ps.ongoing, pid)
	ps.unreplicated = append(ps.unreplicated, t)
	ps.txnsChanged = true
	return t, true
}

// truncateHead forgets producers whose last batch is below the new log start
// offset, as Kafka does when retention deletes segments: their batches can no
// longer be read back, so their next batch is accepted with any sequence.
func (ps *producerState) truncateHead(logStart int64) {
	for pid, e := range ps.producers {
		if max(e.lastOffset(), e.markerOffset) < logStart && e.txnFirst < 0 {
			delete(ps.producers, pid)
		}
	}
}

// expire drops producers whose last batch is producer.id.expiration.ms old
// (ProducerStateManager.removeExpiredProducers: measured from the max timestamp of
// the producer's last batch or marker). Their next batch is accepted at any
// sequence. A producer with an ongoing transaction is never expired: it
// waits for its marker.
func (ps *producerState) expire(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range ps.producers {
		if e.txnFirst < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(ps.producers, pid)
			n++
		}
	}
	return n
}

// lastOffsets maps each producer to the last offset it wrote: the cleaner keeps
// the batch ending there (empty if need be) so the producer's sequence survives.
func (ps *producerState) lastOffsets() map[int64]int64 {
	out := make(map[int64]int64, len(ps.producers))
	for pid, e := range ps.producers {
		out[pid] = e.lastOffset()
	}
	return out
}

// apply records a batch read back from the log (recovery, snapshot replay,
// a follower's append), without the checks a client's batch gets, as
// Kafka's replication origin does. raw is the whole batch when it is a
// control batch (its marker is read from it), else may be nil. A completed
// transaction is returned (ok true).
func (ps *producerState) apply(h *record.BatchHeader, raw []byte) (completedTxn, bool, error) {
	if h.ProducerID < 0 {
		return completedTxn{}, false, nil
	}
	if h.IsControl() {
		mk, ok, err := record.ParseMarker(raw, h)
		if err != nil || !ok {
			// An emptied control batch: the cleaner removed its transaction.
			return completedTxn{}, false, err
		}
		t, done := ps.endTxn(h.ProducerID, h.ProducerEpoch, mk, h.BaseOffset, h.MaxTimestamp)
		return t, done, nil
	}
	ps.update(h.ProducerID, h.ProducerEpoch, batchMeta{
		firstSeq:     h.BaseSequence,
		lastSeq:      lastSequence(h),
		firstOffset:  h.BaseOffset,
		lastOffset:   h.LastOffset,
		maxTimestamp: h.MaxTimestamp,
	}, h.IsTransactional())
	return completedTxn{}, false, nil
}

// ProducerInfo is one producer's state in a partition, as DescribeProducers
// (KIP-664) reports it.
type ProducerInfo struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // -1: none
	LastTimestamp         int64 // -1: none
	CoordinatorEpoch      int32 // -1: no marker yet
	CurrentTxnStartOffset int64 // -1: no ongoing transaction
}

func (ps *producerState) describe() []ProducerInfo {
	out := make([]ProducerInfo, 0, len(ps.producers))
	for pid, e := range ps.producers {
		out = append(out, ProducerInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.txnFirst})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
