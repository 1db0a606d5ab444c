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
	// droppedMarkers are the offsets of the markers this round removed:
	// their aborted-transaction index entries go with them.
	droppedMarkers []int64

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
// transaction loses all its records; a marker is kept while its
// transaction has data batches in the log (its consumers need it, and so
// does the producer state rebuilt from the log), and once it has none it
// gets a delete horizon, after which (delete.retention.ms, so consumers
// that read the data have seen it) it is dropped.
func (f *batchFilter) filter(raw []byte, h *record.BatchHeader) ([]byte, error) {
	aborted := f.txns.aborted(h)
	if h.IsControl() {
		return f.filterMarker(raw, h)
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

// filterMarker keeps a control batch, sets its delete horizon once its
// transaction has no data left, and drops it once that horizon passed.
func (f *batchFilter) filterMarker(raw []byte, h *record.BatchHeader) ([]byte, error) {
	if f.txns == nil || !f.txns.lastMarkerEmpty || h.NumRecords == 0 {
		return raw, nil
	}
	if h.HasDeleteHorizon() {
		if f.nowMs >= h.FirstTimestamp {
			f.droppedMarkers = append(f.droppedMarkers, h.BaseOffset)
			return nil, nil
		}
		return raw, nil
	}
	records, err := record.Section(raw, h)
	if err != nil {
		return nil, err
	}
	var kept []record.Record
	rr := record.NewReader(records, h.NumRecords)
	var rec record.Record
	for rr.Next(&rec) {
		kept = append(kept, rec)
	}
	if err := corruptRecords(h, rr.Err()); err != nil {
		return nil, err
	}
	out, err := record.Retain(raw, h, kept, f.cfg.levelFor(h.Codec()), true, satAdd(f.nowMs, f.deleteRetMs))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return out, nil
}

// txnTracker follows, batch by batch in offset order, which producers are
// inside an aborted transaction (Kafka's CleanedTransactionMetadata): an
// aborted transaction begins at its first offset and ends at the producer's
// next control batch, its abort marker. It also notes whether a
// transaction still has data batches when its marker is reached: a marker
// whose transaction has none left may go (after delete.retention.ms).
type txnTracker struct {
	pending []AbortedTxn   // by first offset, not reached yet
	open    map[int64]bool // producers inside an aborted transaction
	data    map[int64]bool // producers with a transactional batch since their last marker
	// lastMarkerEmpty is set by aborted for a control batch whose
	// transaction had no data batch left.
	lastMarkerEmpty bool
}

func newTxnTracker(list []AbortedTxn) *txnTracker {
	pending := slices.Clone(list)
	sort.Slice(pending, func(i, j int) bool { return pending[i].FirstOffset < pending[j].FirstOffset })
	return &txnTracker{pending: pending, open: map[int64]bool{}, data: map[int64]bool{}}
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
		t.lastMarkerEmpty = !t.data[h.ProducerID]
		delete(t.open, h.ProducerID)
		delete(t.data, h.ProducerID)
		return false
	}
	if h.IsTransactional() {
		t.data[h.ProducerID] = true
	}
	return h.IsTransactional() && t.open[h.ProducerID]
}
