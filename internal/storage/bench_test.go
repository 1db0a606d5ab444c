package storage

import (
	"testing"

	"kbroker/internal/bufpool"
	"kbroker/internal/record"
)

// BenchmarkAppend appends 16 x 1 KiB uncompressed records per batch.
func BenchmarkAppend(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	batch := testBatch{n: 16, valueSize: 1024}.build(b)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch) // Append stamps the batch in place; the copy stands for the network read
		if _, err := l.Append(buf, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead fetches 1 MiB at a time from a log of 16 x 1 KiB batches.
func BenchmarkRead(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	batch := testBatch{n: 16, valueSize: 1024}.build(b)
	for i := 0; i < 2000; i++ {
		if _, err := l.Append(append([]byte(nil), batch...), testNow); err != nil {
			b.Fatal(err)
		}
	}
	hwm := l.HighWatermark()
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	var n int64
	for i := 0; i < b.N; i++ {
		res, err := l.Read(off, 1<<20, true)
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(res.Records))
		off += 16 * 61
		if off >= hwm-16*64 {
			off = 0
		}
	}
	b.SetBytes(n / int64(b.N))
}

// BenchmarkAppendRecompress appends the same uncompressed batches to a topic
// whose compression.type makes the broker compress them.
func BenchmarkAppendRecompress(b *testing.B) {
	for _, c := range []struct {
		name string
		typ  CompressionType
	}{{"lz4", CompressionLz4}, {"zstd", CompressionZstd}, {"gzip", CompressionGzip}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.CompressionType = c.typ
			l, _ := openTestLog(b, cfg)
			batch := testBatch{n: 16, valueSize: 1024}.build(b)
			buf := make([]byte, len(batch))
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, batch)
				if _, err := l.Append(buf, testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadIsolation fetches 1 MiB at a time from a log of
// transactions of 10 batches of 10 x 1 KiB records, one in ten aborted
// (issue 16's read_committed goal: at least 0.9x read_uncommitted).
func BenchmarkReadIsolation(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	const pid = 1
	seq := int32(0)
	for txn := 0; txn < 200; txn++ {
		for i := 0; i < 10; i++ {
			if _, err := l.Append(testBatch{n: 10, valueSize: 1024, pid: pid, epoch: 0, seq: seq, attrs: record.AttrTransactional}.build(b), testNow); err != nil {
				b.Fatal(err)
			}
			seq += 10
		}
		if _, err := l.AppendTxnMarker(TxnMarker{ProducerID: pid, Commit: txn%10 != 3}, testNow); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LastStableOffset()
	for _, committed := range []bool{false, true} {
		name := "read_uncommitted"
		if committed {
			name = "read_committed"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			off, n := int64(0), int64(0)
			for b.Loop() {
				read := l.Read
				if committed {
					read = l.ReadCommitted
				}
				res, err := read(off, 1<<20, true)
				if err != nil {
					b.Fatal(err)
				}
				n += int64(len(res.Records))
				off = lastOffsetOf(res.Records) + 1
				bufpool.Put(res.Records)
				if off >= end {
					off = 0
				}
			}
			b.SetBytes(n / int64(b.N))
		})
	}
}

// BenchmarkFirstWrite creates a partition's log through the Manager and
// appends its first batch: what a produce to a partition never written
// costs (issue 18: 10,000 partitions written once each).
func BenchmarkFirstWrite(b *testing.B) {
	m, err := OpenManager([]string{b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	batch := testBatch{n: 1, valueSize: 100}.build(b)
	buf := make([]byte, len(batch))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := m.Log("first", int32(i), [16]byte{1}, DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		copy(buf, batch)
		if _, err := l.Append(buf, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadKeepingUp is a consumer that keeps up with small batches
// (B2m's partitions): each read asks for the offset after the last one it
// got, a few small batches at a time.
//
//	go test ./internal/storage -run '^$' -bench ReadKeepingUp
func BenchmarkReadKeepingUp(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	batch := testBatch{n: 1, valueSize: 100}.build(b)
	for range 2000 {
		if _, err := l.Append(append([]byte(nil), batch...), testNow); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		res, err := l.Read(off, 2000, true)
		if err != nil {
			b.Fatal(err)
		}
		if off = lastOffsetOf(res.Records) + 1; off >= end {
			off = 0
		}
	}
}
