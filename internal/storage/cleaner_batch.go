package storage

import (
	"fmt"
	"slices"
	"sort"

	"kbroker/internal/record"
)

// batchFilter is what one cleaning round decides batches by: Kafka's cleaner
// RecordFilter.
type batchFilter struct {
	keys         map[string]int64 // key -> latest offset in the dirty range
	latest       int64            // last offset the map covers; later records are kept as they are
	nowMs        int64
	deleteRetMs  int64
	producerLast map[int64]int64 // producer id -> last offset it wrote
	upperBound   int64           // first uncleanable offset of the round
	cfg          *Config
	txns         *txnTracker // which transactional batches were aborted

	// per-round statistics
	recordsRead, recordsRemoved int64
}

// keep is Cleaner.shouldRetainRecord: a record past the map is kept; a keyless
// one is dropped; otherwise it must be the latest for its key and, if a
// tombstone, its batch's delete horizon must not have passed.
func (f *batchFilter) keep(rec *record.Record, offset int64, horizon int64, hasHorizon bool) bool {
	if offset > f.latest {
		return true
	}
	if rec.Key == nil {
		return false
	}
	if found, ok := f.keys[string(rec.Key)]; ok && offset < found {
		return false
	}
	return rec.Value != nil || !hasHorizon || f.nowMs < horizon
}

// filter returns the batch as it should be written to the cleaned segment, or nil
// to drop it (MemoryRecords.filterTo with the cleaner's filter):
//   - every record kept and no delete horizon to set: the batch as it is;
//   - some records kept: the survivors (record.Retain); a batch with
//     tombstones gets its delete horizon (now + delete.retention.ms) the first
//     time it is cleaned;
//   - nothing kept: dropped, unless it is the last batch of a producer still
//     known to the producer state, or ends just before the first uncleanable
//     offset; then its header is kept with no records (record.EmptyCopy).
//
// Transactions, as Kafka's cleaner treats them: a batch of an aborted
// transaction loses all its records; markers are kept (Kafka also removes
// a marker once its transaction's data is gone and delete.retention.ms has
// passed; kbroker keeps them).
func (f *batchFilter) filter(raw []byte, h *record.BatchHeader) ([]byte, error) {
	aborted := f.txns.aborted(h)
	if h.IsControl() {
		return raw, nil
	}
	last, isProducer := f.producerLast[h.ProducerID]
	retainEmpty := (h.ProducerID >= 0 && isProducer && last == h.LastOffset) || h.LastOffset+1 == f.upperBound
	if aborted {
		f.recordsRead += int64(h.NumRecords)
		f.recordsRemoved += int64(h.NumRecords)
		if retainEmpty {
			return record.EmptyCopy(raw, h), nil
		}
		return nil, nil
	}
	records, err := record.Section(raw, h)
	if err != nil {
		return nil, err
	}
	hasHorizon := h.HasDeleteHorizon()
	var kept []record.Record
	tombstones := false
	rr := record.NewReader(records, h.NumRecords)
	var rec record.Record
	for rr.Next(&rec) {
		f.recordsRead++
		if f.keep(&rec, h.BaseOffset+int64(rec.OffsetDelta), h.FirstTimestamp, hasHorizon) {
			kept = append(kept, rec)
			tombstones = tombstones || rec.Value == nil
		} else {
			f.recordsRemoved++
		}
	}
	if err := corruptRecords(h, rr.Err()); err != nil {
		return nil, err
	}
	setHorizon := tombstones && !hasHorizon
	switch {
	case len(kept) == int(h.NumRecords) && !setHorizon:
		return raw, nil
	case len(kept) > 0:
		out, err := record.Retain(raw, h, kept, f.cfg.levelFor(h.Codec()), setHorizon, satAdd(f.nowMs, f.deleteRetMs))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		return out, nil
	case retainEmpty:
		return record.EmptyCopy(raw, h), nil
	}
	return nil, nil
}

// txnTracker follows, batch by batch in offset order, which producers are
// inside an aborted transaction (Kafka's CleanedTransactionMetadata): an
// aborted transaction begins at its first offset and ends at the producer's
// next control batch, its abort marker.
type txnTracker struct {
	pending []AbortedTxn   // by first offset, not reached yet
	open    map[int64]bool // producers inside an aborted transaction
}

func newTxnTracker(list []AbortedTxn) *txnTracker {
	pending := slices.Clone(list)
	sort.Slice(pending, func(i, j int) bool { return pending[i].FirstOffset < pending[j].FirstOffset })
	return &txnTracker{pending: pending, open: map[int64]bool{}}
}

// aborted reports whether h is a data batch of an aborted transaction.
func (t *txnTracker) aborted(h *record.BatchHeader) bool {
	if t == nil || h.ProducerID < 0 {
		return false
	}
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= h.LastOffset {
		t.open[t.pending[0].ProducerID] = true
		t.pending = t.pending[1:]
	}
	if h.IsControl() {
		delete(t.open, h.ProducerID)
		return false
	}
	return h.IsTransactional() && t.open[h.ProducerID]
}
