package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Builder encodes a v2 record batch from records, for what the broker writes
// itself: transaction markers (EndTxnMarker), internal-topic records such as
// committed offsets or transaction state. Set the exported fields, Add the
// records, then Build. The zero producer fields of NewBuilder mean "no
// producer" (-1), as Kafka writes non-idempotent batches.
type Builder struct {
	BaseOffset    int64 // a leader's append assigns the real offsets; a test or follower may set them
	LeaderEpoch   int32 // -1 until stamped
	ProducerID    int64 // -1: none
	ProducerEpoch int16 // -1: none
	BaseSequence  int32 // -1: none
	Transactional bool  // written inside a transaction (attribute bit 4)
	Control       bool  // a control batch: transaction markers (attribute bit 5)
	Codec         Codec
	// Level is the codec's compression level; 0 is Kafka's default for the
	// codec (compression.gzip.level -1, compression.lz4.level 9,
	// compression.zstd.level 3).
	Level int

	records        []byte
	count          int32
	firstTimestamp int64
	maxTimestamp   int64
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte // nil: null
}

// NewBuilder starts an empty batch with no producer, at base offset 0,
// uncompressed.
func NewBuilder() *Builder {
	return &Builder{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// Add appends a record with the given timestamp (ms). A nil key is a null key;
// a nil value a null value (a tombstone on a compacted topic).
func (b *Builder) Add(timestamp int64, key, value []byte, headers ...RecordHeader) {
	if b.count == 0 {
		b.firstTimestamp, b.maxTimestamp = timestamp, timestamp
	}
	b.maxTimestamp = max(b.maxTimestamp, timestamp)
	r := kmsg.Record{
		TimestampDelta64: timestamp - b.firstTimestamp,
		OffsetDelta:      b.count,
		Key:              key,
		Value:            value,
	}
	for _, h := range headers {
		r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	// Encoded with a zero length (one varint byte), then given its real length.
	body := r.AppendTo(nil)[1:]
	b.records = kbin.AppendVarint(b.records, int32(len(body)))
	b.records = append(b.records, body...)
	b.count++
}

// Len is the number of records added.
func (b *Builder) Len() int { return int(b.count) }

// Build encodes the batch; the Builder may not be reused. A batch needs at
// least one record: Kafka's readers take an empty batch's offset range from
// its header, which only the cleaner may leave behind (EmptyCopy).
func (b *Builder) Build() ([]byte, error) {
	if b.count == 0 {
		return nil, fmt.Errorf("%w: a record batch needs at least one record", ErrInvalidRecord)
	}
	if b.Codec < CodecNone || b.Codec > CodecZstd {
		return nil, fmt.Errorf("%w: compression codec id %d", ErrUnsupportedCompressionType, b.Codec)
	}
	records := b.records
	if b.Codec != CodecNone {
		var err error
		if records, err = compress(b.Codec, b.level(), b.records); err != nil {
			return nil, fmt.Errorf("compressing record batch: %v", err)
		}
	}
	attrs := int16(b.Codec)
	if b.Transactional {
		attrs |= AttrTransactional
	}
	if b.Control {
		attrs |= AttrControl
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          b.BaseOffset,
		PartitionLeaderEpoch: b.LeaderEpoch,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      b.count - 1,
		FirstTimestamp:       b.firstTimestamp,
		MaxTimestamp:         b.maxTimestamp,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		FirstSequence:        b.BaseSequence,
		NumRecords:           b.count,
		Records:              records,
	}
	out := kb.AppendTo(nil)
	// kmsg writes Length and CRC as given: fill them in now that the bytes exist.
	binary.BigEndian.PutUint32(out[PosLength:], uint32(len(out)-LogOverhead))
	setCRC(out)
	return out, nil
}

func (b *Builder) level() int {
	if b.Level != 0 {
		return b.Level
	}
	switch b.Codec {
	case CodecGzip:
		return -1
	case CodecLz4:
		return 9
	}
	return 3 // zstd
}

// EndTxnMarker builds the control batch a transaction coordinator has written
// to each partition of a transaction when it ends (commit or abort): one
// control record whose key is the ControlRecordKey (version 0, type commit or
// abort) and whose value is the EndTxnMarker (version 0, the coordinator
// epoch), in a transactional control batch carrying the producer's id and
// epoch and no sequence.
func EndTxnMarker(commit bool, coordinatorEpoch int32, producerID int64, producerEpoch int16, timestamp int64) ([]byte, error) {
	key := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyTypeAbort}
	if commit {
		key.Type = kmsg.ControlRecordKeyTypeCommit
	}
	value := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}
	b := NewBuilder()
	b.ProducerID, b.ProducerEpoch = producerID, producerEpoch
	b.Transactional, b.Control = true, true
	b.Add(timestamp, key.AppendTo(nil), value.AppendTo(nil))
	return b.Build()
}

// Marker is what the control record of a transaction marker says.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// ParseMarker reads the control record of a stored control batch (h
// describes raw): its type (commit or abort) and the coordinator epoch.
// ok is false for a control batch with no records (the cleaner may leave
// one, EmptyCopy) or whose record is no transaction marker (KRaft's
// control types); a record that does not parse is ErrCorruptMessage.
func ParseMarker(raw []byte, h *BatchHeader) (m Marker, ok bool, err error) {
	if !h.IsControl() || h.NumRecords == 0 {
		return m, false, nil
	}
	records, err := Section(raw, h)
	if err != nil {
		return m, false, err
	}
	rr := NewReader(records, h.NumRecords)
	var rec Record
	if !rr.Next(&rec) {
		if err := rr.Err(); err != nil {
			return m, false, fmt.Errorf("%w: control batch at offset %d: %v", ErrCorruptMessage, h.BaseOffset, err)
		}
		return m, false, nil
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(rec.Key); err != nil {
		return m, false, fmt.Errorf("%w: control record key at offset %d: %v", ErrCorruptMessage, h.BaseOffset, err)
	}
	if key.Type != kmsg.ControlRecordKeyTypeAbort && key.Type != kmsg.ControlRecordKeyTypeCommit {
		return m, false, nil
	}
	var value kmsg.EndTxnMarker
	if err := value.ReadFrom(rec.Value); err != nil {
		return m, false, fmt.Errorf("%w: transaction marker value at offset %d: %v", ErrCorruptMessage, h.BaseOffset, err)
	}
	return Marker{Commit: key.Type == kmsg.ControlRecordKeyTypeCommit, CoordinatorEpoch: value.CoordinatorEpoch}, true, nil
}

// Restamp sets a stored batch's base offset (shifting its last offset with
// it) and partition leader epoch in place and recomputes its CRC, for a
// batch the broker built itself (a transaction marker) and now appends as
// leader. It returns the batch's header.
func Restamp(batch []byte, baseOffset int64, leaderEpoch int32) (BatchHeader, bool) {
	if len(batch) < BatchHeaderSize {
		return BatchHeader{}, false
	}
	binary.BigEndian.PutUint64(batch[PosBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(batch[PosLeaderEpoch:], uint32(leaderEpoch))
	setCRC(batch)
	return ParseHeader(batch)
}
