package admin

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRecordBatchRoundTrip(t *testing.T) {
	value := bytes.Repeat([]byte("v"), 100)
	b := recordBatch(value, 3, time.Unix(1, 0))
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || int(rb.Length) != len(b)-12 {
		t.Fatalf("batch header %+v", rb)
	}
	// The CRC covers everything from the attributes on (Castagnoli); a
	// broker that validates batches rejects a wrong one.
	if rb.CRC != int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))) || rb.CRC == 0 {
		t.Fatal("CRC wrong")
	}
	rec := rb.Records
	var r kmsg.Record
	if err := r.ReadFrom(rec); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Value, value) || r.OffsetDelta != 0 {
		t.Fatalf("first record %+v", r)
	}

	// Two batches at offsets 10 and 13, then half of a third.
	one := recordBatch(value, 3, time.Unix(1, 0))
	two := recordBatch(value, 1, time.Unix(1, 0))
	setOffset := func(b []byte, off int64) []byte {
		b = append([]byte(nil), b...)
		for i := range 8 {
			b[i] = byte(off >> (56 - 8*i))
		}
		return b
	}
	all := append(setOffset(one, 10), setOffset(two, 13)...)
	all = append(all, one[:40]...)
	s := summarizeBatches(all)
	if s.Batches != 2 || s.Records != 4 || s.NextOffset != 14 || s.Bytes != len(one)+len(two) || s.Partial != 40 {
		t.Fatalf("summary %+v", s)
	}
	if s := summarizeBatches(nil); s.Batches != 0 || s.NextOffset != -1 {
		t.Fatalf("empty summary %+v", s)
	}
}
