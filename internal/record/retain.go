package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Retain builds a batch holding only the kept records of batch (read from it
// with a Reader), as Kafka's MemoryRecords.buildRetainedRecordsInto does for
// the log cleaner: the same base and last offset, producer fields and sequence
// (so the producer's last sequence survives), recompressed with the batch's
// codec at level. With setHorizon the first timestamp field becomes horizon
// and the delete-horizon attribute is set (KIP-534), the records' timestamp
// deltas being re-encoded against it.
func Retain(batch []byte, h *BatchHeader, kept []Record, level int, setHorizon bool, horizon int64) ([]byte, error) {
	attrs := h.Attributes
	firstTs := h.FirstTimestamp
	base := firstTs
	if setHorizon {
		attrs |= AttrDeleteHorizon
		base = horizon
	}
	var recs []byte
	maxTs := int64(-1)
	for i := range kept {
		rec := &kept[i]
		ts := firstTs + rec.TimestampDelta
		maxTs = max(maxTs, ts)
		if base == firstTs {
			recs = append(recs, rec.raw...)
			continue
		}
		var body []byte
		body = append(body, byte(rec.Attributes))
		body = kbin.AppendVarlong(body, ts-base)
		body = append(body, rec.afterTimestamp...)
		recs = kbin.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	if attrs&AttrLogAppendTime != 0 {
		maxTs = h.MaxTimestamp
	}
	if codec := h.Codec(); codec != CodecNone {
		var err error
		if recs, err = compress(codec, level, recs); err != nil {
			return nil, fmt.Errorf("recompressing cleaned batch at offset %d: %v", h.BaseOffset, err)
		}
	}
	out := make([]byte, BatchHeaderSize+len(recs))
	copy(out, batch[:BatchHeaderSize])
	copy(out[BatchHeaderSize:], recs)
	binary.BigEndian.PutUint32(out[PosLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[PosAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(out[PosFirstTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(out[PosMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(out[PosNumRecords:], uint32(len(kept)))
	setCRC(out)
	return out, nil
}

// EmptyCopy is DefaultRecordBatch.writeEmptyHeader: the batch's offsets,
// producer fields and sequence with no records, uncompressed, both timestamps
// set to its max timestamp. The cleaner keeps one where dropping the batch
// would lose a producer's last sequence.
func EmptyCopy(batch []byte, h *BatchHeader) []byte {
	out := make([]byte, BatchHeaderSize)
	copy(out, batch[:BatchHeaderSize])
	attrs := h.Attributes & (AttrLogAppendTime | AttrTransactional | AttrControl)
	binary.BigEndian.PutUint32(out[PosLength:], BatchHeaderSize-LogOverhead)
	binary.BigEndian.PutUint16(out[PosAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(out[PosFirstTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint32(out[PosNumRecords:], 0)
	setCRC(out)
	return out
}
