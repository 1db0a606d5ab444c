package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
)

// testBatch describes a produced batch; build encodes it with kmsg as a producer would.
type testBatch struct {
	n         int
	valueSize int
	firstTs   int64 // ms; 0 means now
	tsStep    int64 // timestamp delta between records
	tsDeltas  []int64
	pid       int64
	epoch     int16
	seq       int32
	codec     kgo.CompressionCodec
	hasCodec  bool
	attrs     int16
	maxTs     int64 // 0: computed from records
	tag       string
	recs      []kv // if set: the records' keys and values (n is len(recs))
}

// kv is a record's key and value; nil means null (no key, or a tombstone).
type kv struct{ key, value []byte }

func rec(key, value string) kv { return kv{[]byte(key), []byte(value)} }
func tombstone(key string) kv  { return kv{key: []byte(key)} }

var testNow = time.UnixMilli(1_700_000_000_000)

func (tb testBatch) build(t testing.TB) []byte {
	if tb.recs != nil {
		tb.n = len(tb.recs)
	}
	if tb.n == 0 {
		tb.n = 1
	}
	if tb.firstTs == 0 {
		tb.firstTs = testNow.UnixMilli()
	}
	if tb.pid == 0 {
		tb.pid = -1
		tb.epoch = -1
		tb.seq = -1
	}
	var recs []byte
	maxDelta := int64(0)
	for i := 0; i < tb.n; i++ {
		d := int64(i) * tb.tsStep
		if tb.tsDeltas != nil {
			d = tb.tsDeltas[i]
		}
		maxDelta = max(maxDelta, d)
		r := kmsg.Record{
			TimestampDelta64: d,
			OffsetDelta:      int32(i),
			Key:              []byte(fmt.Sprintf("k%d", i)),
			Value:            value(tb.tag, i, tb.valueSize),
			Headers:          []kmsg.Header{{Key: "h", Value: []byte("v")}},
		}
		if tb.recs != nil {
			r.Key, r.Value = tb.recs[i].key, tb.recs[i].value
		}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // body was encoded with a 1-byte length varint of 0
		recs = r.AppendTo(recs)
	}
	attrs := tb.attrs
	if tb.hasCodec {
		comp, err := kgo.DefaultCompressor(tb.codec)
		if err != nil {
			t.Fatal(err)
		}
		out, typ := comp.Compress(new(bytes.Buffer), recs)
		recs = append([]byte(nil), out...)
		attrs |= int16(typ)
	}
	maxTs := tb.firstTs + maxDelta
	if tb.maxTs != 0 {
		maxTs = tb.maxTs
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(tb.n - 1),
		FirstTimestamp:       tb.firstTs,
		MaxTimestamp:         maxTs,
		ProducerID:           tb.pid,
		ProducerEpoch:        tb.epoch,
		FirstSequence:        tb.seq,
		NumRecords:           int32(tb.n),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[record.PosLength:], uint32(len(raw)-record.LogOverhead))
	fixCRC(raw)
	return raw
}

func fixCRC(raw []byte) {
	binary.BigEndian.PutUint32(raw[record.PosCRC:], crc32.Checksum(raw[record.PosAttributes:], crc32.MakeTable(crc32.Castagnoli)))
}

func value(tag string, i, size int) []byte {
	v := []byte(fmt.Sprintf("%s-value-%d", tag, i))
	for len(v) < size {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

// readRecord is one record read back through kmsg/kgo, as a consumer sees it.
type readRecord struct {
	offset int64
	ts     int64
	key    string
	value  string
	null   bool // tombstone
}

// decodeBatches parses fetched bytes the way a client does (kgo's decompressor).
func decodeBatches(t testing.TB, b []byte) []readRecord {
	t.Helper()
	var out []readRecord
	dec := kgo.DefaultDecompressor()
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		size := int(int32(binary.BigEndian.Uint32(b[record.PosLength:]))) + record.LogOverhead
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("fetched batch does not parse: %v", err)
		}
		if uint32(rb.CRC) != crc32.Checksum(b[record.PosAttributes:size], crc32.MakeTable(crc32.Castagnoli)) {
			t.Fatalf("fetched batch at offset %d has a bad CRC", rb.FirstOffset)
		}
		recs := rb.Records
		if c := rb.Attributes & 7; c != 0 {
			var err error
			if recs, err = dec.Decompress(recs, kgo.CompressionCodecType(c)); err != nil {
				t.Fatal(err)
			}
		}
		for i := int32(0); i < rb.NumRecords; i++ {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatal(err)
			}
			n, l := kbinVarint(recs)
			recs = recs[l+int(n):]
			ts := rb.FirstTimestamp + r.TimestampDelta64
			if rb.Attributes&record.AttrLogAppendTime != 0 {
				ts = rb.MaxTimestamp
			}
			out = append(out, readRecord{rb.FirstOffset + int64(r.OffsetDelta), ts, string(r.Key), string(r.Value), r.Value == nil})
		}
		b = b[size:]
	}
	return out
}

func kbinVarint(b []byte) (int32, int) {
	v, n := binary.Varint(b)
	return int32(v), n
}

func openTestLog(t testing.TB, cfg Config) (*Log, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

func mustAppend(t testing.TB, l *Log, raw []byte) AppendResult {
	t.Helper()
	res, err := l.Append(raw, testNow)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

// readAll reads the whole log from offset with repeated Reads of maxBytes.
func readAll(t testing.TB, l *Log, from int64, maxBytes int32) []readRecord {
	t.Helper()
	var out []readRecord
	for off := from; off < l.HighWatermark(); {
		res, err := l.Read(off, maxBytes, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		recs := decodeBatches(t, res.Records)
		if len(recs) == 0 {
			t.Fatalf("read at %d returned nothing (hwm %d)", off, l.HighWatermark())
		}
		for _, r := range recs {
			if r.offset >= off {
				out = append(out, r)
			}
		}
		off = recs[len(recs)-1].offset + 1
	}
	return out
}
