package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Byte positions of the v2 record batch header fields that the broker patches in
// place (Kafka's DefaultRecordBatch does the same: offsets and the LogAppendTime are
// written into the producer's bytes, the CRC recomputed, nothing re-encoded).
const (
	posBaseOffset      = 0
	posLength          = 8
	posLeaderEpoch     = 12
	posMagic           = 16
	posCRC             = 17
	posAttributes      = 21 // CRC covers from here to the end of the batch
	posLastOffsetDelta = 23
	posFirstTimestamp  = 27
	posMaxTimestamp    = 35
	posProducerID      = 43
	posProducerEpoch   = 51
	posBaseSequence    = 53
	posNumRecords      = 57
	batchHeaderSize    = 61
	// logOverhead is base offset + length: what precedes the length-counted bytes.
	logOverhead = 12
)

// Attribute bits of a v2 batch.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codec ids (attributes bits 0-2).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchCRC is the v2 batch checksum: CRC-32C over attributes..end.
func batchCRC(b []byte) uint32 { return crc32.Checksum(b[posAttributes:], castagnoli) }

// batchInfo is what Append learns about a produced batch while validating it.
type batchInfo struct {
	hdr          kmsg.RecordBatch
	maxTimestamp int64  // max over record timestamps (-1 if none carry one)
	records      []byte // the records section, decompressed (aliases the batch when uncompressed)
}

func (b *batchInfo) numRecords() int32 { return b.hdr.NumRecords }
func (b *batchInfo) codec() int8       { return int8(b.hdr.Attributes & attrCompressionMask) }
func (b *batchInfo) hasProducerID() bool {
	return b.hdr.ProducerID >= 0
}

// lastSequence follows Kafka's DefaultRecordBatch.lastSequence: sequences wrap at
// int32 max back to 0.
func (b *batchInfo) lastSequence() int32 {
	return incrementSequence(b.hdr.FirstSequence, b.hdr.LastOffsetDelta)
}

func incrementSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// validateBatch checks one produced batch the way Kafka's ProduceRequest,
// UnifiedLog.analyzeAndValidateRecords and LogValidator do for magic v2, in the same
// order so that the same malformed input yields the same error code.
func validateBatch(raw []byte, cfg *Config, now time.Time, segmentBytes int64) (batchInfo, error) {
	var bi batchInfo
	// Framing follows Kafka's batch reader: bytes that do not hold one
	// complete batch are "no batch at all" (INVALID_RECORD); a size below the
	// header or a magic from the future is a corrupt batch (CORRUPT_MESSAGE).
	if len(raw) < logOverhead {
		return bi, fmt.Errorf("%w: produce requests must have at least one record batch per partition", ErrInvalidRecord)
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[posLength:])))
	if length+logOverhead < batchHeaderSize {
		return bi, fmt.Errorf("%w: record batch size %d is smaller than the minimum allowed overhead %d",
			ErrCorruptMessage, length+logOverhead, batchHeaderSize)
	}
	if length+logOverhead > int64(len(raw)) {
		return bi, fmt.Errorf("%w: produce requests must have at least one complete record batch per partition (batch length %d, %d bytes sent)",
			ErrInvalidRecord, length+logOverhead, len(raw))
	}
	// Produce v3+ must carry exactly one batch per partition. Fewer trailing
	// bytes than a batch header cannot be a second batch, so Kafka checks the
	// first batch before anything else; we then refuse the leftovers rather
	// than store them.
	trailing := int64(len(raw)) - length - logOverhead
	if trailing >= logOverhead {
		return bi, fmt.Errorf("%w: produce requests must carry exactly one record batch per partition (%d trailing bytes)",
			ErrInvalidRecord, trailing)
	}
	raw = raw[:length+logOverhead]
	if err := bi.hdr.ReadFrom(raw); err != nil {
		return bi, fmt.Errorf("%w: record batch header: %v", ErrCorruptMessage, err)
	}
	h := &bi.hdr
	if h.Magic > 2 {
		return bi, fmt.Errorf("%w: invalid magic %d found in record batch", ErrCorruptMessage, h.Magic)
	}
	if h.Magic != 2 {
		// Kafka 4 only accepts Produce v3+, which may only carry magic v2 batches.
		return bi, fmt.Errorf("%w: produce requests may only contain record batches with magic 2, got magic %d", ErrInvalidRecord, h.Magic)
	}
	if trailing > 0 {
		if got := batchCRC(raw); got != uint32(h.CRC) {
			return bi, fmt.Errorf("%w: record batch CRC mismatch (stored %d, computed %d)", ErrCorruptMessage, uint32(h.CRC), got)
		}
		return bi, fmt.Errorf("%w: %d bytes follow the record batch", ErrInvalidRecord, trailing)
	}
	size := int64(len(raw))
	if size > int64(cfg.MaxMessageBytes) {
		return bi, fmt.Errorf("%w: record batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, cfg.MaxMessageBytes)
	}
	if size > segmentBytes {
		return bi, fmt.Errorf("%w: record batch of %d bytes exceeds segment.bytes %d", ErrRecordListTooLarge, size, segmentBytes)
	}
	if got := batchCRC(raw); got != uint32(h.CRC) {
		return bi, fmt.Errorf("%w: record batch CRC mismatch (stored %d, computed %d)", ErrCorruptMessage, uint32(h.CRC), got)
	}
	if h.FirstOffset != 0 {
		return bi, fmt.Errorf("%w: the base offset of a produced record batch must be 0, got %d", ErrInvalidRecord, h.FirstOffset)
	}
	if h.LastOffsetDelta < 0 {
		return bi, fmt.Errorf("%w: record batch has an invalid offset range [0, %d]", ErrInvalidRecord, h.LastOffsetDelta)
	}
	if h.NumRecords <= 0 {
		return bi, fmt.Errorf("%w: invalid reported count for record batch: %d", ErrInvalidRecord, h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return bi, fmt.Errorf("%w: inconsistent batch offset range [0, %d] and count of records %d",
			ErrInvalidRecord, h.LastOffsetDelta, h.NumRecords)
	}
	if h.Attributes&attrControl != 0 {
		return bi, fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	}
	// Transactions are not implemented yet (no AddPartitionsToTxn / markers): a
	// transactional batch could never be committed or aborted, so refuse it.
	if h.Attributes&attrTransactional != 0 {
		return bi, fmt.Errorf("%w: transactional record batches are not supported by this broker", ErrInvalidRecord)
	}
	if h.ProducerID >= 0 && h.FirstSequence < 0 {
		return bi, fmt.Errorf("%w: invalid sequence number %d in record batch with producer id %d",
			ErrInvalidRecord, h.FirstSequence, h.ProducerID)
	}
	if cfg.TimestampType == CreateTime && h.Attributes&attrLogAppendTime != 0 {
		return bi, fmt.Errorf("%w: producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp)
	}
	if c := bi.codec(); c > codecZstd {
		return bi, fmt.Errorf("%w: compression codec id %d", ErrUnsupportedCompressionType, c)
	}
	records := raw[batchHeaderSize:]
	if bi.codec() != codecNone {
		dec, err := decompress(bi.codec(), records)
		if err != nil {
			return bi, fmt.Errorf("%w: decompressing record batch: %v", ErrCorruptMessage, err)
		}
		records = dec
	}
	rv := recordValidator{
		cfg:       cfg,
		nowMs:     now.UnixMilli(),
		firstTs:   h.FirstTimestamp,
		maxTs:     -1,
		checkTs:   cfg.TimestampType == CreateTime,
		compacted: cfg.CleanupPolicy.Compact,
		expected:  h.NumRecords,
	}
	if err := rv.walk(records); err != nil {
		return bi, err
	}
	bi.maxTimestamp = rv.maxTs
	bi.records = records
	return bi, nil
}

// recompress rebuilds a validated batch in codec, as Kafka's LogValidator does when
// compression.type names a codec other than the batch's: the records are kept
// byte for byte (same offset and timestamp deltas), only the records section is
// re-encoded and the attributes, length and CRC rewritten. Offsets, sequence and
// producer fields are untouched; stamp assigns the offsets afterwards.
func recompress(raw []byte, bi *batchInfo, codec int8, level int) ([]byte, error) {
	recs := bi.records
	if codec != codecNone {
		var err error
		if recs, err = compress(codec, level, bi.records); err != nil {
			return nil, fmt.Errorf("%w: compressing record batch: %v", ErrStorage, err)
		}
	}
	out := make([]byte, batchHeaderSize+len(recs))
	copy(out, raw[:batchHeaderSize])
	copy(out[batchHeaderSize:], recs)
	attrs := bi.hdr.Attributes&^attrCompressionMask | int16(codec)
	binary.BigEndian.PutUint32(out[posLength:], uint32(len(out)-logOverhead))
	binary.BigEndian.PutUint16(out[posAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(out[posCRC:], batchCRC(out))
	bi.hdr.Attributes = attrs
	return out, nil
}

// recordValidator walks the records of a batch with kbin's varint reader (no
// allocation per record) checking structure, offset deltas and timestamps.
type recordValidator struct {
	cfg       *Config
	nowMs     int64
	firstTs   int64
	maxTs     int64
	checkTs   bool
	compacted bool // cleanup.policy includes compact: every record needs a key
	expected  int32
}

func (rv *recordValidator) walk(src []byte) error {
	r := kbin.Reader{Src: src}
	for i := int32(0); i < rv.expected; i++ {
		if len(r.Src) == 0 {
			return fmt.Errorf("%w: record batch declares %d records but holds %d", ErrInvalidRecord, rv.expected, i)
		}
		length := r.Varint()
		if !r.Ok() || length < 0 {
			return fmt.Errorf("%w: record %d has an invalid length", ErrInvalidRecord, i)
		}
		body := r.Span(int(length))
		if !r.Ok() {
			return fmt.Errorf("%w: record %d length %d exceeds the batch", ErrInvalidRecord, i, length)
		}
		tsDelta, offDelta, keyLen, err := parseRecordBody(body)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrInvalidRecord, i, err)
		}
		// LogValidator.validateKey: the cleaner could never tell which record a
		// keyless one supersedes (INVALID_RECORD).
		if rv.compacted && keyLen < 0 {
			return fmt.Errorf("%w: compacted topic cannot accept message without key (record %d)", ErrInvalidRecord, i)
		}
		// Kafka rebuilds a compressed batch whose inner offsets are not 0..n-1 (old
		// clients); v2 producers always number them correctly, and rebuilding would
		// mean recompressing, so such a batch is refused instead.
		if offDelta != i {
			return fmt.Errorf("%w: record %d has offset delta %d, expected %d", ErrInvalidRecord, i, offDelta, i)
		}
		ts := rv.firstTs + tsDelta
		if ts > rv.maxTs {
			rv.maxTs = ts
		}
		// NO_TIMESTAMP (-1) records are exempt, as in Kafka's LogValidator.
		if rv.checkTs && ts != -1 {
			if timestampOutOfRange(ts, rv.nowMs, rv.cfg) {
				return fmt.Errorf("%w: timestamp %d of record %d is out of range; it must be within [%d, %d]",
					ErrInvalidTimestamp, ts, i, satSub(rv.nowMs, rv.cfg.TimestampBeforeMaxMs), satAdd(rv.nowMs, rv.cfg.TimestampAfterMaxMs))
			}
		}
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%w: %d bytes remain after the %d declared records", ErrInvalidRecord, len(r.Src), rv.expected)
	}
	return nil
}

// parseRecordBody checks that one record's body parses to exactly its declared
// length (Kafka's DefaultRecord.readFrom does the same) and returns its deltas and
// key length (-1: null key).
func parseRecordBody(body []byte) (tsDelta int64, offDelta, keyLen int32, err error) {
	b := kbin.Reader{Src: body}
	b.Int8() // attributes: unused in v2
	tsDelta = b.Varlong()
	offDelta = b.Varint()
	if keyLen = b.Varint(); keyLen >= 0 {
		b.Span(int(keyLen))
	}
	if vl := b.Varint(); vl >= 0 {
		b.Span(int(vl))
	}
	nh := b.Varint()
	if !b.Ok() {
		return 0, 0, 0, fmt.Errorf("truncated record")
	}
	if nh < 0 {
		return 0, 0, 0, fmt.Errorf("invalid negative header count %d", nh)
	}
	for h := int32(0); h < nh; h++ {
		kl := b.Varint()
		if kl < 0 {
			return 0, 0, 0, fmt.Errorf("invalid negative header key size %d", kl)
		}
		b.Span(int(kl))
		if vl := b.Varint(); vl >= 0 {
			b.Span(int(vl))
		}
		if !b.Ok() {
			return 0, 0, 0, fmt.Errorf("truncated record header")
		}
	}
	if !b.Ok() {
		return 0, 0, 0, fmt.Errorf("truncated record")
	}
	if len(b.Src) != 0 {
		return 0, 0, 0, fmt.Errorf("invalid record size: %d bytes left over in the record payload", len(b.Src))
	}
	return tsDelta, offDelta, keyLen, nil
}

// recordTimestamps calls fn with each record's offset delta and timestamp, stopping
// when fn returns false. Used on the read side (OffsetForTimestamp, MaxTimestamp) on
// batches that were validated when appended.
func recordTimestamps(batch []byte, fn func(offDelta int32, ts int64) bool) error {
	if len(batch) < batchHeaderSize {
		return fmt.Errorf("%w: short batch", ErrCorruptMessage)
	}
	attrs := int16(binary.BigEndian.Uint16(batch[posAttributes:]))
	n := int32(binary.BigEndian.Uint32(batch[posNumRecords:]))
	if attrs&attrLogAppendTime != 0 {
		// Every record of a LogAppendTime batch has the batch's max timestamp.
		ts := int64(binary.BigEndian.Uint64(batch[posMaxTimestamp:]))
		for i := int32(0); i < n; i++ {
			if !fn(i, ts) {
				return nil
			}
		}
		return nil
	}
	first := int64(binary.BigEndian.Uint64(batch[posFirstTimestamp:]))
	records := batch[batchHeaderSize:]
	if c := int8(attrs & attrCompressionMask); c != codecNone {
		dec, err := decompress(c, records)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
		records = dec
	}
	r := kbin.Reader{Src: records}
	for i := int32(0); i < n; i++ {
		length := r.Varint()
		body := r.Span(int(length))
		if !r.Ok() || length < 0 {
			return fmt.Errorf("%w: truncated record", ErrCorruptMessage)
		}
		tsDelta, offDelta, _, err := parseRecordBody(body)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
		if !fn(offDelta, first+tsDelta) {
			return nil
		}
	}
	return nil
}

// timestampOutOfRange is Kafka's CreateTime check: the record may be at most
// message.timestamp.before.max.ms older and message.timestamp.after.max.ms newer than
// the broker clock. Differences are computed unsigned so extreme timestamps cannot
// overflow into the accepted range.
func timestampOutOfRange(ts, now int64, cfg *Config) bool {
	if ts <= now {
		return uint64(now)-uint64(ts) > uint64(cfg.TimestampBeforeMaxMs)
	}
	return uint64(ts)-uint64(now) > uint64(cfg.TimestampAfterMaxMs)
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// batchHeader is the part of an on-disk batch header the log needs when scanning.
type batchHeader struct {
	baseOffset    int64
	size          int64 // whole batch including logOverhead
	magic         int8
	attributes    int16
	lastOffset    int64
	maxTimestamp  int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	numRecords    int32
}

// parseHeader decodes a stored batch header with kmsg. It only checks what scanning
// needs (length sane, magic 2); CRCs are checked by recovery.
func parseHeader(b []byte) (batchHeader, bool) {
	var h kmsg.RecordBatch
	if len(b) < batchHeaderSize {
		return batchHeader{}, false
	}
	// ReadFrom wants the whole batch; give it the header with a zero-length body.
	var tmp [batchHeaderSize]byte
	copy(tmp[:], b[:batchHeaderSize])
	binary.BigEndian.PutUint32(tmp[posLength:], batchHeaderSize-logOverhead)
	if err := h.ReadFrom(tmp[:]); err != nil {
		return batchHeader{}, false
	}
	length := int64(int32(binary.BigEndian.Uint32(b[posLength:])))
	if length+logOverhead < batchHeaderSize || h.Magic != 2 || h.LastOffsetDelta < 0 {
		return batchHeader{}, false
	}
	return batchHeader{
		baseOffset:    h.FirstOffset,
		size:          length + logOverhead,
		magic:         h.Magic,
		attributes:    h.Attributes,
		lastOffset:    h.FirstOffset + int64(h.LastOffsetDelta),
		maxTimestamp:  h.MaxTimestamp,
		producerID:    h.ProducerID,
		producerEpoch: h.ProducerEpoch,
		baseSequence:  h.FirstSequence,
		numRecords:    h.NumRecords,
	}, true
}

// stamp assigns the batch its offsets, leader epoch and timestamp in place, as
// Kafka's LogValidator does for v2: with CreateTime the max timestamp is the max of
// the record timestamps; with LogAppendTime it is the broker clock and the timestamp
// type attribute is set. The CRC is recomputed only when a CRC-covered byte changed.
func stamp(raw []byte, bi *batchInfo, baseOffset int64, leaderEpoch int32, cfg *Config, nowMs int64) (maxTs int64) {
	binary.BigEndian.PutUint64(raw[posBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(raw[posLeaderEpoch:], uint32(leaderEpoch))
	attrs := bi.hdr.Attributes
	maxTs = bi.maxTimestamp
	if cfg.TimestampType == LogAppendTime {
		attrs |= attrLogAppendTime
		maxTs = nowMs
	}
	if attrs != bi.hdr.Attributes || maxTs != bi.hdr.MaxTimestamp {
		binary.BigEndian.PutUint16(raw[posAttributes:], uint16(attrs))
		binary.BigEndian.PutUint64(raw[posMaxTimestamp:], uint64(maxTs))
		binary.BigEndian.PutUint32(raw[posCRC:], batchCRC(raw))
	}
	return maxTs
}
