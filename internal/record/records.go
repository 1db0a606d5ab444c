package record

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record is one record of a batch, aliasing the (decompressed) records section
// it was read from.
type Record struct {
	Attributes     int8 // unused in v2
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil: null key
	Value          []byte // nil: null value (a tombstone)

	raw            []byte // length varint and body, as stored
	afterTimestamp []byte // the body from the offset delta on
}

// Reader walks the records of a records section with kbin's varint reader (no
// allocation per record), checking that each record parses to exactly its
// declared length (as Kafka's DefaultRecord.readFrom does) and that the section
// holds exactly the declared count. Use it like bufio.Scanner:
//
//	r := NewReader(section, n)
//	for r.Next(&rec) { ... }
//	if err := r.Err(); err != nil { ... }
//
// Errors carry no sentinel: a produced batch's bad records are INVALID_RECORD, a
// stored one's CORRUPT_MESSAGE, so the caller wraps them.
type Reader struct {
	r     kbin.Reader
	count int32
	read  int32
	err   error
}

// NewReader reads count records from section.
func NewReader(section []byte, count int32) *Reader {
	return &Reader{r: kbin.Reader{Src: section}, count: count}
}

// Next parses the next record into rec, reporting false at the end or on an
// error (then Err tells).
func (rr *Reader) Next(rec *Record) bool {
	if rr.err != nil {
		return false
	}
	i := rr.read
	if i == rr.count {
		if len(rr.r.Src) != 0 {
			rr.err = fmt.Errorf("%d bytes remain after the %d declared records", len(rr.r.Src), rr.count)
		}
		return false
	}
	if len(rr.r.Src) == 0 {
		rr.err = fmt.Errorf("record batch declares %d records but holds %d", rr.count, i)
		return false
	}
	before := rr.r.Src
	length := varint(&rr.r)
	if !rr.r.Ok() || length < 0 {
		rr.err = fmt.Errorf("record %d has an invalid length", i)
		return false
	}
	body := rr.r.Span(int(length))
	if !rr.r.Ok() {
		rr.err = fmt.Errorf("record %d length %d exceeds the batch", i, length)
		return false
	}
	if err := parseBody(body, rec); err != nil {
		rr.err = fmt.Errorf("record %d: %v", i, err)
		return false
	}
	rec.raw = before[:len(before)-len(rr.r.Src)]
	rr.read++
	return true
}

// Err is the first malformation found, nil if every record parsed.
func (rr *Reader) Err() error { return rr.err }

func parseBody(body []byte, rec *Record) error {
	b := kbin.Reader{Src: body}
	rec.Attributes = b.Int8()
	rec.TimestampDelta = varlong(&b)
	rec.afterTimestamp = b.Src
	rec.OffsetDelta = varint(&b)
	rec.Key = nil
	if kl := varint(&b); kl >= 0 {
		rec.Key = b.Span(int(kl))
	}
	rec.Value = nil
	if vl := varint(&b); vl >= 0 {
		rec.Value = b.Span(int(vl))
	}
	nh := varint(&b)
	if !b.Ok() {
		return fmt.Errorf("truncated record")
	}
	if nh < 0 {
		return fmt.Errorf("invalid negative header count %d", nh)
	}
	for h := int32(0); h < nh; h++ {
		kl := varint(&b)
		if kl < 0 {
			return fmt.Errorf("invalid negative header key size %d", kl)
		}
		b.Span(int(kl))
		if vl := varint(&b); vl >= 0 {
			b.Span(int(vl))
		}
		if !b.Ok() {
			return fmt.Errorf("truncated record header")
		}
	}
	if !b.Ok() {
		return fmt.Errorf("truncated record")
	}
	if len(b.Src) != 0 {
		return fmt.Errorf("invalid record size: %d bytes left over in the record payload", len(b.Src))
	}
	return nil
}

// Section returns the records section of a stored batch, decompressed (it
// aliases the batch when uncompressed).
func Section(batch []byte, h *BatchHeader) ([]byte, error) {
	records := batch[BatchHeaderSize:]
	if c := h.Codec(); c != CodecNone {
		dec, err := decompress(c, records)
		if err != nil {
			return nil, fmt.Errorf("%w: decompressing batch at offset %d: %v", ErrCorruptMessage, h.BaseOffset, err)
		}
		records = dec
	}
	return records, nil
}

// Timestamps calls fn with each record's offset delta and timestamp, stopping
// when fn returns false. It is meant for the read side (finding an offset by
// timestamp) on batches that were validated when appended.
func Timestamps(batch []byte, fn func(offDelta int32, ts int64) bool) error {
	if len(batch) < BatchHeaderSize {
		return fmt.Errorf("%w: short batch", ErrCorruptMessage)
	}
	attrs := int16(binary.BigEndian.Uint16(batch[PosAttributes:]))
	n := int32(binary.BigEndian.Uint32(batch[PosNumRecords:]))
	if attrs&AttrLogAppendTime != 0 {
		// Every record of a LogAppendTime batch has the batch's max timestamp.
		ts := int64(binary.BigEndian.Uint64(batch[PosMaxTimestamp:]))
		for i := int32(0); i < n; i++ {
			if !fn(i, ts) {
				return nil
			}
		}
		return nil
	}
	first := int64(binary.BigEndian.Uint64(batch[PosFirstTimestamp:]))
	records, err := Section(batch, &BatchHeader{BaseOffset: int64(binary.BigEndian.Uint64(batch)), Attributes: attrs})
	if err != nil {
		return err
	}
	rr := NewReader(records, n)
	var rec Record
	for rr.Next(&rec) {
		if !fn(rec.OffsetDelta, first+rec.TimestampDelta) {
			return nil
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	return nil
}

// varint reads a zigzag varint, decoding the one- and two-byte cases here
// and leaving longer ones to kbin. Nearly every length, delta and header
// count of a small record fits two bytes, and kbin's reader (two calls per
// varint) was a fifth of the broker's CPU producing 100-byte records.
func varint(b *kbin.Reader) int32 {
	s := b.Src
	if len(s) > 0 && s[0] < 0x80 {
		b.Src = s[1:]
		return int32(s[0]>>1) ^ -int32(s[0]&1)
	}
	if len(s) > 1 && s[1] < 0x80 {
		x := uint32(s[0]&0x7f) | uint32(s[1])<<7
		b.Src = s[2:]
		return int32(x>>1) ^ -int32(x&1)
	}
	return b.Varint()
}

// varlong is varint for int64 (a record's timestamp delta).
func varlong(b *kbin.Reader) int64 {
	s := b.Src
	if len(s) > 0 && s[0] < 0x80 {
		b.Src = s[1:]
		return int64(s[0]>>1) ^ -int64(s[0]&1)
	}
	if len(s) > 1 && s[1] < 0x80 {
		x := uint64(s[0]&0x7f) | uint64(s[1])<<7
		b.Src = s[2:]
		return int64(x>>1) ^ -int64(x&1)
	}
	return b.Varlong()
}
