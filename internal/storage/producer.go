package storage

import (
	"fmt"

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
}

func (e *producerEntry) lastOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

// producerState is the ProducerStateManager of one partition, minus transactions.
// It is only touched under the Log's appendMu.
type producerState struct {
	producers map[int64]*producerEntry
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry)}
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

// check validates a new batch's epoch and sequence the way Kafka 4's
// ProducerAppendInfo does for client appends:
//   - an epoch below the current one is fenced (INVALID_PRODUCER_EPOCH);
//   - a new epoch must start at sequence 0, unless the producer is unknown here;
//   - within an epoch the first sequence must follow the last one (wrapping at
//     int32 max to 0);
//   - a producer with no state (never seen, or its batches all removed by
//     retention) may start at any sequence: Kafka stopped returning
//     UNKNOWN_PRODUCER_ID for this (KIP-360).
func (ps *producerState) check(pid int64, epoch int16, firstSeq int32, offset int64) error {
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
		return nil
	}
	if len(e.batches) == 0 {
		return nil
	}
	last := e.batches[len(e.batches)-1].lastSeq
	if !inSequence(last, firstSeq) {
		return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
			ErrOutOfOrderSequence, pid, offset, firstSeq, last)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == 1<<31-1)
}

// update records a written batch. A new epoch forgets the old epoch's batches.
func (ps *producerState) update(pid int64, epoch int16, m batchMeta) {
	e := ps.producers[pid]
	if e == nil {
		e = &producerEntry{epoch: epoch}
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
}

// truncateHead forgets producers whose last batch is below the new log start
// offset, as Kafka does when retention deletes segments: their batches can no
// longer be read back, so their next batch is accepted with any sequence.
func (ps *producerState) truncateHead(logStart int64) {
	for pid, e := range ps.producers {
		if e.lastOffset() < logStart {
			delete(ps.producers, pid)
		}
	}
}

// expire drops producers whose last batch is producer.id.expiration.ms old
// (ProducerStateManager.removeExpiredProducers: measured from the max timestamp of
// the producer's last batch). Their next batch is accepted at any sequence.
func (ps *producerState) expire(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range ps.producers {
		if len(e.batches) == 0 || nowMs-e.batches[len(e.batches)-1].maxTimestamp >= expirationMs {
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

// apply records a batch read back from the log (recovery, snapshot replay).
func (ps *producerState) apply(h *record.BatchHeader) {
	if h.ProducerID < 0 || h.IsControl() {
		return
	}
	ps.update(h.ProducerID, h.ProducerEpoch, batchMeta{
		firstSeq:     h.BaseSequence,
		lastSeq:      record.IncrementSequence(h.BaseSequence, int32(h.LastOffset-h.BaseOffset)),
		firstOffset:  h.BaseOffset,
		lastOffset:   h.LastOffset,
		maxTimestamp: h.MaxTimestamp,
	})
}
