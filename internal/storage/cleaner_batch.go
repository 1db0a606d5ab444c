package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// attrDeleteHorizon marks a batch whose first timestamp field holds its delete
// horizon (KIP-534): the time after which the cleaner may drop its tombstones.
// Record timestamp deltas are relative to it, so clients still read the right
// record timestamps.
const attrDeleteHorizon = 0x40

// cleanerRecord is one record of a batch being cleaned.
type cleanerRecord struct {
	raw       []byte // length varint and body, as stored
	attr      int8
	tsDelta   int64
	afterTs   []byte // the body from the offset delta on
	offDelta  int32
	key       []byte // nil: no key
	tombstone bool   // null value
}

// forEachRecord parses the n records of a (decompressed) records section.
func forEachRecord(src []byte, n int32, fn func(*cleanerRecord)) error {
	r := kbin.Reader{Src: src}
	var rec cleanerRecord
	for i := int32(0); i < n; i++ {
		before := r.Src
		length := r.Varint()
		body := r.Span(int(length))
		if !r.Ok() || length < 0 {
			return fmt.Errorf("%w: truncated record %d", ErrCorruptMessage, i)
		}
		rec.raw = before[:len(before)-len(r.Src)]
		b := kbin.Reader{Src: body}
		rec.attr = b.Int8()
		rec.tsDelta = b.Varlong()
		rec.afterTs = b.Src
		rec.offDelta = b.Varint()
		rec.key = nil
		if kl := b.Varint(); kl >= 0 {
			rec.key = b.Span(int(kl))
		}
		vl := b.Varint()
		rec.tombstone = vl < 0
		if !b.Ok() {
			return fmt.Errorf("%w: truncated record %d", ErrCorruptMessage, i)
		}
		fn(&rec)
	}
	return nil
}

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

	// per-round statistics
	recordsRead, recordsRemoved int64
}

// keep is Cleaner.shouldRetainRecord: a record past the map is kept; a keyless
// one is dropped; otherwise it must be the latest for its key and, if a
// tombstone, its batch's delete horizon must not have passed.
func (f *batchFilter) keep(rec *cleanerRecord, offset int64, horizon int64, hasHorizon bool) bool {
	if offset > f.latest {
		return true
	}
	if rec.key == nil {
		return false
	}
	if found, ok := f.keys[string(rec.key)]; ok && offset < found {
		return false
	}
	return !rec.tombstone || !hasHorizon || f.nowMs < horizon
}

// filter returns the batch as it should be written to the cleaned segment, or nil
// to drop it (MemoryRecords.filterTo with the cleaner's filter):
//   - every record kept and no delete horizon to set: the batch as it is;
//   - some records kept: a batch with the same base and last offset, producer
//     fields and sequence (so the producer's last sequence survives), holding
//     the survivors, recompressed with the batch's codec; a batch with
//     tombstones gets its delete horizon (now + delete.retention.ms) the first
//     time it is cleaned;
//   - nothing kept: dropped, unless it is the last batch of a producer still
//     known to the producer state, or ends just before the first uncleanable
//     offset; then its header is kept with no records.
func (f *batchFilter) filter(raw []byte, h *batchHeader) ([]byte, error) {
	if h.attributes&attrControl != 0 {
		return raw, nil
	}
	last, isProducer := f.producerLast[h.producerID]
	retainEmpty := (h.producerID >= 0 && isProducer && last == h.lastOffset) || h.lastOffset+1 == f.upperBound
	codec := int8(h.attributes & attrCompressionMask)
	records := raw[batchHeaderSize:]
	if codec != codecNone {
		dec, err := decompress(codec, records)
		if err != nil {
			return nil, fmt.Errorf("%w: decompressing batch at offset %d: %v", ErrCorruptMessage, h.baseOffset, err)
		}
		records = dec
	}
	firstTs := int64(binary.BigEndian.Uint64(raw[posFirstTimestamp:]))
	hasHorizon := h.attributes&attrDeleteHorizon != 0
	var kept []cleanerRecord
	tombstones := false
	err := forEachRecord(records, h.numRecords, func(rec *cleanerRecord) {
		f.recordsRead++
		if f.keep(rec, h.baseOffset+int64(rec.offDelta), firstTs, hasHorizon) {
			kept = append(kept, *rec)
			tombstones = tombstones || rec.tombstone
		} else {
			f.recordsRemoved++
		}
	})
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.baseOffset, err)
	}
	setHorizon := tombstones && !hasHorizon
	switch {
	case len(kept) == int(h.numRecords) && !setHorizon:
		return raw, nil
	case len(kept) > 0:
		return f.rebuild(raw, h, kept, codec, firstTs, setHorizon)
	case retainEmpty:
		return emptyBatch(raw, h), nil
	}
	return nil, nil
}

// rebuild writes a batch of the kept records, as MemoryRecords.buildRetainedRecordsInto.
func (f *batchFilter) rebuild(raw []byte, h *batchHeader, kept []cleanerRecord, codec int8, firstTs int64, setHorizon bool) ([]byte, error) {
	attrs := h.attributes
	base := firstTs
	if setHorizon {
		attrs |= attrDeleteHorizon
		base = satAdd(f.nowMs, f.deleteRetMs)
	}
	var recs []byte
	maxTs := int64(-1)
	for i := range kept {
		rec := &kept[i]
		ts := firstTs + rec.tsDelta
		maxTs = max(maxTs, ts)
		if base == firstTs {
			recs = append(recs, rec.raw...)
			continue
		}
		// The first timestamp now holds the horizon: re-encode the delta.
		var body []byte
		body = append(body, byte(rec.attr))
		body = kbin.AppendVarlong(body, ts-base)
		body = append(body, rec.afterTs...)
		recs = kbin.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	if attrs&attrLogAppendTime != 0 {
		maxTs = h.maxTimestamp
	}
	if codec != codecNone {
		var err error
		if recs, err = compress(codec, f.cfg.levelFor(codec), recs); err != nil {
			return nil, fmt.Errorf("%w: recompressing cleaned batch at offset %d: %v", ErrStorage, h.baseOffset, err)
		}
	}
	out := make([]byte, batchHeaderSize+len(recs))
	copy(out, raw[:batchHeaderSize])
	copy(out[batchHeaderSize:], recs)
	binary.BigEndian.PutUint32(out[posLength:], uint32(len(out)-logOverhead))
	binary.BigEndian.PutUint16(out[posAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(out[posFirstTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(out[posMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(out[posNumRecords:], uint32(len(kept)))
	binary.BigEndian.PutUint32(out[posCRC:], batchCRC(out))
	return out, nil
}

// emptyBatch is DefaultRecordBatch.writeEmptyHeader: the batch's offsets,
// producer fields and sequence with no records, uncompressed, both timestamps
// set to its max timestamp.
func emptyBatch(raw []byte, h *batchHeader) []byte {
	out := make([]byte, batchHeaderSize)
	copy(out, raw[:batchHeaderSize])
	attrs := h.attributes & (attrLogAppendTime | attrTransactional | attrControl)
	binary.BigEndian.PutUint32(out[posLength:], batchHeaderSize-logOverhead)
	binary.BigEndian.PutUint16(out[posAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(out[posFirstTimestamp:], uint64(h.maxTimestamp))
	binary.BigEndian.PutUint32(out[posNumRecords:], 0)
	binary.BigEndian.PutUint32(out[posCRC:], batchCRC(out))
	return out
}
