package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientRecord is one record as a Kafka client decodes it.
type clientRecord struct {
	offset  int64
	ts      int64
	key     []byte
	value   []byte
	headers []kmsg.Header
}

// decodeAsClient parses one batch with kmsg and kgo's decompressor, as a
// consumer would, checking the CRC.
func decodeAsClient(t *testing.T, raw []byte) (kmsg.RecordBatch, []clientRecord) {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		t.Fatalf("kmsg cannot read the batch: %v", err)
	}
	if uint32(kb.CRC) != CRC(raw) {
		t.Fatalf("stored CRC %d, computed %d", uint32(kb.CRC), CRC(raw))
	}
	recs := kb.Records
	if c := kb.Attributes & AttrCompressionMask; c != 0 {
		var err error
		if recs, err = kgo.DefaultDecompressor().Decompress(recs, kgo.CompressionCodecType(c)); err != nil {
			t.Fatalf("kgo cannot decompress: %v", err)
		}
	}
	var out []clientRecord
	for i := int32(0); i < kb.NumRecords; i++ {
		var r kmsg.Record
		if err := r.ReadFrom(recs); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		out = append(out, clientRecord{kb.FirstOffset + int64(r.OffsetDelta), kb.FirstTimestamp + r.TimestampDelta64, r.Key, r.Value, r.Headers})
		recs = recs[int(r.Length)+varintLen(r.Length):]
	}
	if len(recs) != 0 {
		t.Fatalf("%d bytes after the records", len(recs))
	}
	return kb, out
}

func varintLen(v int32) int {
	n, u := 1, uint32(v<<1^v>>31)
	for ; u >= 0x80; u >>= 7 {
		n++
	}
	return n
}

func TestBuiltBatchesDecodeAsClientsAndTheParserRead(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			b := NewBuilder()
			b.BaseOffset, b.LeaderEpoch = 100, 7
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = 42, 3, 10
			b.Transactional = true
			b.Codec = codec
			b.Add(1_000, []byte("k0"), []byte("v0"), RecordHeader{Key: "h", Value: []byte("x")})
			b.Add(990, nil, []byte("keyless"))
			b.Add(1_005, []byte("k2"), nil, RecordHeader{Key: "null", Value: nil})
			raw, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}

			kb, recs := decodeAsClient(t, raw)
			if kb.FirstOffset != 100 || kb.PartitionLeaderEpoch != 7 || kb.Magic != 2 || kb.LastOffsetDelta != 2 ||
				kb.NumRecords != 3 || kb.ProducerID != 42 || kb.ProducerEpoch != 3 || kb.FirstSequence != 10 ||
				kb.FirstTimestamp != 1_000 || kb.MaxTimestamp != 1_005 {
				t.Fatalf("header as kmsg reads it: %+v", kb)
			}
			if kb.Attributes != int16(codec)|AttrTransactional {
				t.Fatalf("attributes %#x", kb.Attributes)
			}
			want := []clientRecord{
				{100, 1_000, []byte("k0"), []byte("v0"), []kmsg.Header{{Key: "h", Value: []byte("x")}}},
				{101, 990, nil, []byte("keyless"), nil},
				{102, 1_005, []byte("k2"), nil, []kmsg.Header{{Key: "null"}}},
			}
			for i, r := range recs {
				w := want[i]
				if r.offset != w.offset || r.ts != w.ts || !bytes.Equal(r.key, w.key) || (r.key == nil) != (w.key == nil) ||
					!bytes.Equal(r.value, w.value) || (r.value == nil) != (w.value == nil) || fmt.Sprint(r.headers) != fmt.Sprint(w.headers) {
					t.Fatalf("record %d = %+v, want %+v", i, r, w)
				}
			}

			h, ok := ParseHeader(raw)
			if !ok || h.Size != int64(len(raw)) || h.BaseOffset != 100 || h.LastOffset != 102 || h.Codec() != codec ||
				!h.IsTransactional() || h.IsControl() || h.LastSequence() != 12 {
				t.Fatalf("ParseHeader: %+v %v", h, ok)
			}
			if !ValidCRC(raw) || WholeBatches(raw) != len(raw) {
				t.Fatal("the built batch does not frame or check as a stored batch")
			}
			section, err := Section(raw, &h)
			if err != nil {
				t.Fatal(err)
			}
			rr := NewReader(section, h.NumRecords)
			var rec Record
			for i := 0; rr.Next(&rec); i++ {
				if rec.OffsetDelta != int32(i) || !bytes.Equal(rec.Key, want[i].key) || (rec.Value == nil) != (want[i].value == nil) {
					t.Fatalf("Reader record %d = %+v", i, rec)
				}
			}
			if rr.Err() != nil {
				t.Fatal(rr.Err())
			}
			var stamps []int64
			if err := Timestamps(raw, func(_ int32, ts int64) bool { stamps = append(stamps, ts); return true }); err != nil ||
				fmt.Sprint(stamps) != "[1000 990 1005]" {
				t.Fatalf("Timestamps: %v %v", stamps, err)
			}
		})
	}
}

func TestBuiltProducerBatchPassesProduceValidation(t *testing.T) {
	b := NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 5, 0, 0
	b.Codec = CodecZstd
	for i := range 4 {
		b.Add(int64(2_000+i), []byte{byte('a' + i)}, bytes.Repeat([]byte("v"), 100))
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	rules := ProduceRules{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 30, CreateTime: true,
		MinTimestamp: 0, MaxTimestamp: 10_000, RequireKeys: true}
	bt, err := ValidateProduced(raw, &rules)
	if err != nil {
		t.Fatal(err)
	}
	if bt.MaxRecordTimestamp != 2_003 || bt.Header.NumRecords != 4 || bt.Header.LastSequence() != 3 {
		t.Fatalf("validated: %+v", bt.Header)
	}
	// Stamping at offset 50 with LogAppendTime changes what a client reads.
	if maxTs := bt.Stamp(50, 2, true, 9_999); maxTs != 9_999 {
		t.Fatalf("max timestamp %d", maxTs)
	}
	kb, recs := decodeAsClient(t, bt.Raw)
	if kb.FirstOffset != 50 || kb.PartitionLeaderEpoch != 2 || kb.MaxTimestamp != 9_999 || kb.Attributes&AttrLogAppendTime == 0 ||
		recs[3].offset != 53 {
		t.Fatalf("stamped batch: %+v", kb)
	}
}

func TestProduceValidationRefusesControlAcceptsTransactionalBatches(t *testing.T) {
	rules := ProduceRules{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 30}
	marker, err := EndTxnMarker(true, 4, 9, 1, 3_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateProduced(marker, &rules); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a control batch from a client: %v", err)
	}
	b := NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = 9, 1, 0, true
	b.Add(3_000, []byte("k"), []byte("v"))
	txn, _ := b.Build()
	bt, err := ValidateProduced(txn, &rules)
	if err != nil || !bt.Header.IsTransactional() {
		t.Fatalf("a transactional batch: %v", err)
	}
	// Without a producer id a transactional batch means nothing.
	b = NewBuilder()
	b.Transactional = true
	b.Add(3_000, []byte("k"), []byte("v"))
	anon, _ := b.Build()
	if _, err := ValidateProduced(anon, &rules); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a transactional batch without producer: %v", err)
	}
}

func TestParseMarkerReadsWhatEndTxnMarkerWrote(t *testing.T) {
	for _, commit := range []bool{true, false} {
		raw, err := EndTxnMarker(commit, 17, 1234, 5, 7_000)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := ParseHeader(raw)
		m, ok, err := ParseMarker(raw, &h)
		if err != nil || !ok || m.Commit != commit || m.CoordinatorEpoch != 17 {
			t.Fatalf("commit %v: %+v %v %v", commit, m, ok, err)
		}
		empty := EmptyCopy(raw, &h)
		eh, _ := ParseHeader(empty)
		if _, ok, err := ParseMarker(empty, &eh); ok || err != nil {
			t.Fatalf("emptied marker: %v %v", ok, err)
		}
	}
}

func TestEndTxnMarkerDecodesAsKafkaControlRecord(t *testing.T) {
	for _, commit := range []bool{true, false} {
		raw, err := EndTxnMarker(commit, 17, 1234, 5, 7_000)
		if err != nil {
			t.Fatal(err)
		}
		kb, recs := decodeAsClient(t, raw)
		if kb.Attributes != AttrControl|AttrTransactional || kb.ProducerID != 1234 || kb.ProducerEpoch != 5 ||
			kb.FirstSequence != -1 || kb.NumRecords != 1 || kb.MaxTimestamp != 7_000 {
			t.Fatalf("marker batch: %+v", kb)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(recs[0].key); err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyTypeAbort
		if commit {
			wantType = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Version != 0 || key.Type != wantType {
			t.Fatalf("control key %+v, want type %v", key, wantType)
		}
		var value kmsg.EndTxnMarker
		if err := value.ReadFrom(recs[0].value); err != nil || value.CoordinatorEpoch != 17 {
			t.Fatalf("marker value %+v %v", value, err)
		}
		if h, ok := ParseHeader(raw); !ok || !h.IsControl() || !h.IsTransactional() {
			t.Fatalf("ParseHeader of a marker: %+v", h)
		}
	}
}

func TestBuilderRefusesAnEmptyBatchAndAnUnknownCodec(t *testing.T) {
	if _, err := NewBuilder().Build(); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("empty batch: %v", err)
	}
	b := NewBuilder()
	b.Codec = 5
	b.Add(1, nil, nil)
	if _, err := b.Build(); !errors.Is(err, ErrUnsupportedCompressionType) {
		t.Fatalf("codec 5: %v", err)
	}
}
