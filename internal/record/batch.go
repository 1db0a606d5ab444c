// Package record is Kafka's v2 record batch format: parsing and validating
// batches, iterating their records, (de)compressing them, stamping the offsets
// and timestamps a broker assigns, and building new batches. The log, its
// cleaner and the coordinators that write internal topics share it. It
// imports nothing of kbroker.
package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Byte positions of the v2 record batch header fields. A broker patches some of
// them in place (Kafka's DefaultRecordBatch does the same: offsets and the
// LogAppendTime are written into the producer's bytes, the CRC recomputed,
// nothing re-encoded).
const (
	PosBaseOffset      = 0
	PosLength          = 8
	PosLeaderEpoch     = 12
	PosMagic           = 16
	PosCRC             = 17
	PosAttributes      = 21 // the CRC covers from here to the end of the batch
	PosLastOffsetDelta = 23
	PosFirstTimestamp  = 27
	PosMaxTimestamp    = 35
	PosProducerID      = 43
	PosProducerEpoch   = 51
	PosBaseSequence    = 53
	PosNumRecords      = 57
	// BatchHeaderSize is the size of a v2 batch with no records.
	BatchHeaderSize = 61
	// LogOverhead is base offset + length: what precedes the length-counted bytes.
	LogOverhead = 12
)

// Attribute bits of a v2 batch.
const (
	AttrCompressionMask = 0x07
	AttrLogAppendTime   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon marks a batch whose first timestamp field holds its
	// delete horizon (KIP-534): the time after which the cleaner may drop its
	// tombstones. Record timestamp deltas are relative to it, so clients still
	// read the right record timestamps.
	AttrDeleteHorizon = 0x40
)

// Codec is a compression codec id (attributes bits 0-2).
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLz4    Codec = 3
	CodecZstd   Codec = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC is the v2 batch checksum: CRC-32C over attributes..end.
func CRC(batch []byte) uint32 { return crc32.Checksum(batch[PosAttributes:], castagnoli) }

// ValidCRC reports whether a whole batch's stored CRC matches its bytes.
func ValidCRC(batch []byte) bool {
	return len(batch) >= BatchHeaderSize && CRC(batch) == binary.BigEndian.Uint32(batch[PosCRC:])
}

// setCRC recomputes a batch's CRC after a covered byte changed.
func setCRC(batch []byte) { binary.BigEndian.PutUint32(batch[PosCRC:], CRC(batch)) }

// BatchHeader is a parsed batch header with its offsets made absolute.
type BatchHeader struct {
	BaseOffset     int64
	Size           int64 // whole batch including LogOverhead
	LeaderEpoch    int32
	Magic          int8
	Attributes     int16
	LastOffset     int64
	FirstTimestamp int64
	MaxTimestamp   int64
	ProducerID     int64
	ProducerEpoch  int16
	BaseSequence   int32
	NumRecords     int32
}

// Codec is the batch's compression codec.
func (h *BatchHeader) Codec() Codec { return Codec(h.Attributes & AttrCompressionMask) }

// IsControl reports a control batch (transaction markers).
func (h *BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsTransactional reports a batch written inside a transaction.
func (h *BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// HasDeleteHorizon reports that FirstTimestamp holds the batch's delete horizon.
func (h *BatchHeader) HasDeleteHorizon() bool { return h.Attributes&AttrDeleteHorizon != 0 }

// LastSequence follows Kafka's DefaultRecordBatch.lastSequence: sequences wrap
// at int32 max back to 0.
func (h *BatchHeader) LastSequence() int32 {
	return IncrementSequence(h.BaseSequence, int32(h.LastOffset-h.BaseOffset))
}

func headerOf(b *kmsg.RecordBatch, size int64) BatchHeader {
	return BatchHeader{
		BaseOffset:     b.FirstOffset,
		Size:           size,
		LeaderEpoch:    b.PartitionLeaderEpoch,
		Magic:          b.Magic,
		Attributes:     b.Attributes,
		LastOffset:     b.FirstOffset + int64(b.LastOffsetDelta),
		FirstTimestamp: b.FirstTimestamp,
		MaxTimestamp:   b.MaxTimestamp,
		ProducerID:     b.ProducerID,
		ProducerEpoch:  b.ProducerEpoch,
		BaseSequence:   b.FirstSequence,
		NumRecords:     b.NumRecords,
	}
}

// ParseHeader decodes a stored batch header (b holds at least its first
// BatchHeaderSize bytes) with kmsg. It only checks what scanning a log needs
// (length sane, magic 2, offset delta not negative); CRCs are checked by the
// log's recovery and ValidCRC.
func ParseHeader(b []byte) (BatchHeader, bool) {
	var h kmsg.RecordBatch
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, false
	}
	// ReadFrom wants the whole batch; give it the header with a zero-length body.
	var tmp [BatchHeaderSize]byte
	copy(tmp[:], b[:BatchHeaderSize])
	binary.BigEndian.PutUint32(tmp[PosLength:], BatchHeaderSize-LogOverhead)
	if err := h.ReadFrom(tmp[:]); err != nil {
		return BatchHeader{}, false
	}
	length := int64(int32(binary.BigEndian.Uint32(b[PosLength:])))
	if length+LogOverhead < BatchHeaderSize || h.Magic != 2 || h.LastOffsetDelta < 0 {
		return BatchHeader{}, false
	}
	return headerOf(&h, length+LogOverhead), true
}

// WholeBatches returns the length of the prefix of b made of complete batches
// (by their length fields only).
func WholeBatches(b []byte) int {
	n := 0
	for len(b)-n >= LogOverhead {
		size := int(int32(binary.BigEndian.Uint32(b[n+PosLength:]))) + LogOverhead
		if size < LogOverhead || n+size > len(b) {
			break
		}
		n += size
	}
	return n
}

// IncrementSequence is seq + delta wrapping at int32 max back to 0, as Kafka's
// DefaultRecordBatch.incrementSequence.
func IncrementSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// DecrementSequence is IncrementSequence's inverse.
func DecrementSequence(seq, delta int32) int32 {
	if seq < delta {
		return math.MaxInt32 - (delta - seq) + 1
	}
	return seq - delta
}

// StoredBatches parses raw as a sequence of whole stored batches, as a
// follower receives them from its leader, checking what Kafka checks of
// replicated batches before appending them: each frames exactly (no partial
// batch at the end; a fetcher trims one with WholeBatches), is magic 2 with a
// sane offset range, and has a good CRC. The offsets themselves are the log's
// to check.
func StoredBatches(raw []byte) ([]BatchHeader, error) {
	var out []BatchHeader
	for pos := 0; pos < len(raw); {
		h, ok := ParseHeader(raw[pos:])
		if !ok {
			return nil, fmt.Errorf("%w: no valid v2 batch header at byte %d", ErrCorruptMessage, pos)
		}
		if h.Size > int64(len(raw)-pos) {
			return nil, fmt.Errorf("%w: batch at byte %d declares %d bytes, %d remain", ErrCorruptMessage, pos, h.Size, len(raw)-pos)
		}
		if !ValidCRC(raw[pos : pos+int(h.Size)]) {
			return nil, fmt.Errorf("%w: record batch CRC mismatch in the batch at offset %d", ErrCorruptMessage, h.BaseOffset)
		}
		out = append(out, h)
		pos += int(h.Size)
	}
	return out, nil
}
