package record

import (
	"math"
	"testing"
)

// FuzzValidateProduced feeds arbitrary bytes to ValidateProduced: it must never
// panic, and a batch it accepts must decode as a client decodes it and stamp
// into a batch whose CRC holds.
func FuzzValidateProduced(f *testing.F) {
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		b := NewBuilder()
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Codec = 3, 0, 0, codec
		b.Add(1_000, []byte("k"), []byte("v"), RecordHeader{Key: "h", Value: []byte("x")})
		b.Add(1_001, nil, nil)
		raw, err := b.Build()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add(make([]byte, BatchHeaderSize))
	rules := ProduceRules{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 30, CreateTime: true,
		MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64}
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs := [][]byte{data}
		if len(data) >= BatchHeaderSize {
			fixed := append([]byte(nil), data...)
			setCRC(fixed)
			inputs = append(inputs, fixed)
		}
		for _, in := range inputs {
			bt, err := ValidateProduced(append([]byte(nil), in...), &rules)
			if err != nil {
				continue
			}
			bt.Stamp(10, 1, false, 0)
			if !ValidCRC(bt.Raw) {
				t.Fatal("stamped batch has a bad CRC")
			}
			if _, recs := decodeAsClient(t, bt.Raw); len(recs) != int(bt.Header.NumRecords) {
				t.Fatalf("client decoded %d records, header says %d", len(recs), bt.Header.NumRecords)
			}
		}
	})
}
