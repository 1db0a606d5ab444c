package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProduceRules are the topic settings a produced batch is checked against.
type ProduceRules struct {
	MaxBatchBytes   int64 // max.message.bytes: a larger batch is ErrMessageTooLarge
	MaxSegmentBytes int64 // segment.bytes: a larger batch is ErrRecordListTooLarge
	// CreateTime is message.timestamp.type=CreateTime: the producer may not set
	// the LogAppendTime attribute, and every record timestamp (but NO_TIMESTAMP,
	// -1) must lie in [MinTimestamp, MaxTimestamp], the broker clock minus
	// message.timestamp.before.max.ms and plus message.timestamp.after.max.ms.
	CreateTime                 bool
	MinTimestamp, MaxTimestamp int64
	// RequireKeys is cleanup.policy including compact: the cleaner could never
	// tell which record a keyless one supersedes.
	RequireKeys bool
	// Coordinator is a batch a coordinator of this broker writes (Kafka's
	// AppendOrigin.COORDINATOR): a producer's batch without a sequence, as
	// the group coordinator writes a TxnOffsetCommit, is accepted.
	Coordinator bool
}

// Batch is a produced batch that passed ValidateProduced.
type Batch struct {
	Raw    []byte // exactly one batch; Recompress replaces it, Stamp patches it
	Header BatchHeader
	// MaxRecordTimestamp is the max over the record timestamps (-1 if none
	// carries one).
	MaxRecordTimestamp int64
	records            []byte // the records section, decompressed (aliases Raw when uncompressed)
}

// ValidateProduced checks one produced batch the way Kafka's ProduceRequest,
// UnifiedLog.analyzeAndValidateRecords and LogValidator do for magic v2, in the
// same order so that the same malformed input yields the same error code.
func ValidateProduced(raw []byte, rules *ProduceRules) (Batch, error) {
	var bt Batch
	// Framing follows Kafka's batch reader: bytes that do not hold one
	// complete batch are "no batch at all" (INVALID_RECORD); a size below the
	// header or a magic from the future is a corrupt batch (CORRUPT_MESSAGE).
	if len(raw) < LogOverhead {
		return bt, fmt.Errorf("%w: produce requests must have at least one record batch per partition", ErrInvalidRecord)
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[PosLength:])))
	if length+LogOverhead < BatchHeaderSize {
		return bt, fmt.Errorf("%w: record batch size %d is smaller than the minimum allowed overhead %d",
			ErrCorruptMessage, length+LogOverhead, BatchHeaderSize)
	}
	if length+LogOverhead > int64(len(raw)) {
		return bt, fmt.Errorf("%w: produce requests must have at least one complete record batch per partition (batch length %d, %d bytes sent)",
			ErrInvalidRecord, length+LogOverhead, len(raw))
	}
	// Produce v3+ must carry exactly one batch per partition. Fewer trailing
	// bytes than a batch header cannot be a second batch, so Kafka checks the
	// first batch before anything else; we then refuse the leftovers rather
	// than store them.
	trailing := int64(len(raw)) - length - LogOverhead
	if trailing >= LogOverhead {
		return bt, fmt.Errorf("%w: produce requests must carry exactly one record batch per partition (%d trailing bytes)",
			ErrInvalidRecord, trailing)
	}
	raw = raw[:length+LogOverhead]
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		return bt, fmt.Errorf("%w: record batch header: %v", ErrCorruptMessage, err)
	}
	if kb.Magic > 2 {
		return bt, fmt.Errorf("%w: invalid magic %d found in record batch", ErrCorruptMessage, kb.Magic)
	}
	if kb.Magic != 2 {
		// Kafka 4 only accepts Produce v3+, which may only carry magic v2 batches.
		return bt, fmt.Errorf("%w: produce requests may only contain record batches with magic 2, got magic %d", ErrInvalidRecord, kb.Magic)
	}
	if trailing > 0 {
		if err := checkCRC(raw, &kb); err != nil {
			return bt, err
		}
		return bt, fmt.Errorf("%w: %d bytes follow the record batch", ErrInvalidRecord, trailing)
	}
	size := int64(len(raw))
	if size > rules.MaxBatchBytes {
		return bt, fmt.Errorf("%w: record batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, rules.MaxBatchBytes)
	}
	if size > rules.MaxSegmentBytes {
		return bt, fmt.Errorf("%w: record batch of %d bytes exceeds segment.bytes %d", ErrRecordListTooLarge, size, rules.MaxSegmentBytes)
	}
	if err := checkCRC(raw, &kb); err != nil {
		return bt, err
	}
	if kb.FirstOffset != 0 {
		return bt, fmt.Errorf("%w: the base offset of a produced record batch must be 0, got %d", ErrInvalidRecord, kb.FirstOffset)
	}
	if err := checkCount(&kb); err != nil {
		return bt, err
	}
	// Control batches (transaction markers) are written by the broker when a
	// transaction coordinator asks (WriteTxnMarkers), never by a client.
	if kb.Attributes&AttrControl != 0 {
		return bt, fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	}
	// A transactional batch needs a producer id, as Kafka's ProduceRequest
	// validation requires; its epoch and sequence are the log's to check.
	if kb.Attributes&AttrTransactional != 0 && kb.ProducerID < 0 {
		return bt, fmt.Errorf("%w: transactional record batch without a producer id", ErrInvalidRecord)
	}
	if kb.ProducerID >= 0 && kb.FirstSequence < 0 && !rules.Coordinator {
		return bt, fmt.Errorf("%w: invalid sequence number %d in record batch with producer id %d",
			ErrInvalidRecord, kb.FirstSequence, kb.ProducerID)
	}
	if rules.CreateTime && kb.Attributes&AttrLogAppendTime != 0 {
		return bt, fmt.Errorf("%w: producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp)
	}
	bt.Raw, bt.Header = raw, headerOf(&kb, size)
	if c := bt.Header.Codec(); c > CodecZstd {
		return bt, fmt.Errorf("%w: compression codec id %d", ErrUnsupportedCompressionType, c)
	}
	records := raw[BatchHeaderSize:]
	if c := bt.Header.Codec(); c != CodecNone {
		dec, err := decompress(c, records)
		if err != nil {
			return bt, fmt.Errorf("%w: decompressing record batch: %v", ErrCorruptMessage, err)
		}
		records = dec
	}
	maxTs, err := checkRecords(records, &bt.Header, rules)
	if err != nil {
		return bt, err
	}
	bt.MaxRecordTimestamp, bt.records = maxTs, records
	return bt, nil
}

func checkCRC(raw []byte, kb *kmsg.RecordBatch) error {
	if got := CRC(raw); got != uint32(kb.CRC) {
		return fmt.Errorf("%w: record batch CRC mismatch (stored %d, computed %d)", ErrCorruptMessage, uint32(kb.CRC), got)
	}
	return nil
}

// checkCount is Kafka's check that the header's offset range and record count
// agree (INVALID_RECORD).
func checkCount(kb *kmsg.RecordBatch) error {
	if kb.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: record batch has an invalid offset range [0, %d]", ErrInvalidRecord, kb.LastOffsetDelta)
	}
	if kb.NumRecords <= 0 {
		return fmt.Errorf("%w: invalid reported count for record batch: %d", ErrInvalidRecord, kb.NumRecords)
	}
	if int64(kb.LastOffsetDelta)+1 != int64(kb.NumRecords) {
		return fmt.Errorf("%w: inconsistent batch offset range [0, %d] and count of records %d",
			ErrInvalidRecord, kb.LastOffsetDelta, kb.NumRecords)
	}
	return nil
}

// checkRecords walks the records checking structure, keys, offset deltas and
// timestamps, and returns the max record timestamp.
func checkRecords(records []byte, h *BatchHeader, rules *ProduceRules) (int64, error) {
	maxTs := int64(-1)
	rr := NewReader(records, h.NumRecords)
	var rec Record
	for i := int32(0); rr.Next(&rec); i++ {
		// LogValidator.validateKey (INVALID_RECORD).
		if rules.RequireKeys && rec.Key == nil {
			return 0, fmt.Errorf("%w: compacted topic cannot accept message without key (record %d)", ErrInvalidRecord, i)
		}
		// Kafka rebuilds a compressed batch whose inner offsets are not 0..n-1 (old
		// clients); v2 producers always number them correctly, and rebuilding would
		// mean recompressing, so such a batch is refused instead.
		if rec.OffsetDelta != i {
			return 0, fmt.Errorf("%w: record %d has offset delta %d, expected %d", ErrInvalidRecord, i, rec.OffsetDelta, i)
		}
		ts := h.FirstTimestamp + rec.TimestampDelta
		maxTs = max(maxTs, ts)
		// NO_TIMESTAMP (-1) records are exempt, as in Kafka's LogValidator.
		if rules.CreateTime && ts != -1 && (ts < rules.MinTimestamp || ts > rules.MaxTimestamp) {
			return 0, fmt.Errorf("%w: timestamp %d of record %d is out of range; it must be within [%d, %d]",
				ErrInvalidTimestamp, ts, i, rules.MinTimestamp, rules.MaxTimestamp)
		}
	}
	if err := rr.Err(); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	return maxTs, nil
}

// Recompress rebuilds the batch in codec at level, as Kafka's LogValidator does
// when compression.type names a codec other than the batch's: the records are
// kept byte for byte (same offset and timestamp deltas), only the records
// section is re-encoded and the attributes, length and CRC rewritten. Offsets,
// sequence and producer fields are untouched; Stamp assigns the offsets
// afterwards. The error is a compressor failure (an invalid level).
func (bt *Batch) Recompress(codec Codec, level int) error {
	recs := bt.records
	if codec != CodecNone {
		var err error
		if recs, err = compress(codec, level, bt.records); err != nil {
			return fmt.Errorf("compressing record batch: %v", err)
		}
	}
	out := make([]byte, BatchHeaderSize+len(recs))
	copy(out, bt.Raw[:BatchHeaderSize])
	copy(out[BatchHeaderSize:], recs)
	attrs := bt.Header.Attributes&^AttrCompressionMask | int16(codec)
	binary.BigEndian.PutUint32(out[PosLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[PosAttributes:], uint16(attrs))
	setCRC(out)
	bt.Raw = out
	bt.Header.Attributes, bt.Header.Size = attrs, int64(len(out))
	return nil
}

// Stamp assigns the batch its offsets and leader epoch in place and, with
// logAppendTime, the broker clock nowMs as its timestamp, as Kafka's
// LogValidator does for v2: with CreateTime the max timestamp is the max of the
// record timestamps; with LogAppendTime it is nowMs and the timestamp type
// attribute is set. The CRC is recomputed only when a CRC-covered byte changed.
// It returns the batch's max timestamp.
func (bt *Batch) Stamp(baseOffset int64, leaderEpoch int32, logAppendTime bool, nowMs int64) (maxTs int64) {
	raw, h := bt.Raw, &bt.Header
	binary.BigEndian.PutUint64(raw[PosBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(raw[PosLeaderEpoch:], uint32(leaderEpoch))
	attrs := h.Attributes
	maxTs = bt.MaxRecordTimestamp
	if logAppendTime {
		attrs |= AttrLogAppendTime
		maxTs = nowMs
	}
	if attrs != h.Attributes || maxTs != h.MaxTimestamp {
		binary.BigEndian.PutUint16(raw[PosAttributes:], uint16(attrs))
		binary.BigEndian.PutUint64(raw[PosMaxTimestamp:], uint64(maxTs))
		setCRC(raw)
	}
	h.LastOffset += baseOffset - h.BaseOffset
	h.BaseOffset, h.LeaderEpoch, h.Attributes, h.MaxTimestamp = baseOffset, leaderEpoch, attrs, maxTs
	return maxTs
}
