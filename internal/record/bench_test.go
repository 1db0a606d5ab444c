package record

import (
	"bytes"
	"testing"
)

// BenchmarkValidateProduced measures the per-record cost of validating a
// produced batch of small records, the cost that dominates produce CPU at
// 100-byte records (kbench B1 100B).
func BenchmarkValidateProduced(b *testing.B) {
	for _, size := range []int{100, 1024} {
		bl := NewBuilder()
		const n = 160
		for i := range n {
			bl.Add(1_700_000_000_000+int64(i), nil, bytes.Repeat([]byte{'v'}, size))
		}
		raw, err := bl.Build()
		if err != nil {
			b.Fatal(err)
		}
		rules := &ProduceRules{MaxBatchBytes: 1 << 20, MaxSegmentBytes: 1 << 30}
		b.Run(map[int]string{100: "100B", 1024: "1KiB"}[size], func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			buf := make([]byte, len(raw))
			for b.Loop() {
				copy(buf, raw)
				if _, err := ValidateProduced(buf, rules); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
