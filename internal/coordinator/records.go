package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one key and value of an internal topic; a nil Value is a
// tombstone, which compaction later drops together with the key's older
// values.
type Record struct {
	Key, Value []byte
	// Batch says what batch a replayed record came in: transactional
	// offset commits (TxnOffsetCommit) carry their producer, and the
	// commit or abort marker that settles them is a control record. Zero
	// (ProducerID 0 aside) for records the coordinator writes itself.
	Batch BatchInfo
}

// BatchInfo is what Replay needs of a record's batch header.
type BatchInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	// Control marks a control record (Key is a ControlRecordKey, Value
	// an EndTxnMarker).
	Control bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes records as one uncompressed v2 record batch, ready for
// the log to assign its offsets. It is the one place that knows the batch
// layout on the write side.
func buildBatch(records []Record, now time.Time) []byte {
	return buildBatchOf(records, now, BatchInfo{ProducerID: -1, ProducerEpoch: -1})
}

// buildBatchOf is buildBatch for a batch of a producer: a transactional one
// (offsets committed in a transaction) or a control one (its marker). Such
// batches carry no sequence, as Kafka's coordinators write them.
func buildBatchOf(records []Record, now time.Time, info BatchInfo) []byte {
	var body []byte
	for i, r := range records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		enc := rec.AppendTo(nil) // Length 0 is a placeholder: re-encode with the real one
		rec.Length = int32(len(enc) - 1)
		body = rec.AppendTo(body)
	}
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           info.ProducerID,
		ProducerEpoch:        info.ProducerEpoch,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              body,
	}
	if info.Transactional {
		b.Attributes |= 0x10
	}
	if info.Control {
		b.Attributes |= 0x20
	}
	raw := b.AppendTo(nil)
	// Length counts everything after itself; the CRC covers everything
	// after the CRC field (attributes onwards).
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

// batchHeaderSize is a v2 batch's fixed part, up to and including the
// record count.
const batchHeaderSize = 61

var errBadBatch = errors.New("coordinator: malformed record batch in internal topic log")

// forEachRecord calls fn with each record of the v2 batches in raw (as the
// log returns them), and returns the offset after the last whole batch.
// Compressed batches are skipped: the coordinators write none. Control
// records (transaction markers) are passed on with Batch.Control set.
func forEachRecord(raw []byte, fn func(offset int64, r Record) error) (next int64, err error) {
	next = -1
	for len(raw) >= batchHeaderSize {
		size := int(int32(binary.BigEndian.Uint32(raw[8:12]))) + 12
		if size < batchHeaderSize || size > len(raw) {
			break // a partial batch at the end of a read
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return next, fmt.Errorf("%w: %v", errBadBatch, err)
		}
		raw = raw[size:]
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		const compressionMask, controlBit = 0x07, 0x20
		const transactionalBit = 0x10
		if b.Attributes&compressionMask != 0 {
			continue
		}
		info := BatchInfo{ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch,
			Transactional: b.Attributes&transactionalBit != 0, Control: b.Attributes&controlBit != 0}
		recs := b.Records
		for i := int32(0); i < b.NumRecords && len(recs) > 0; i++ {
			n, w := binary.Varint(recs)
			if w <= 0 || n < 0 || int64(w)+n > int64(len(recs)) {
				return next, errBadBatch
			}
			var rec kmsg.Record
			if err := rec.ReadFrom(recs[:w+int(n)]); err != nil {
				return next, fmt.Errorf("%w: %v", errBadBatch, err)
			}
			recs = recs[w+int(n):]
			if err := fn(b.FirstOffset+int64(rec.OffsetDelta), Record{Key: rec.Key, Value: rec.Value, Batch: info}); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}
