package storage

import (
	"bytes"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/record"
)

// FuzzAppend feeds arbitrary bytes to Append: it must either reject them or accept
// them, and whatever it accepted must read back intact.
func FuzzAppend(f *testing.F) {
	f.Add(testBatch{n: 3, valueSize: 20}.build(f))
	f.Add(testBatch{n: 2, pid: 5, epoch: 1, seq: 0}.build(f))
	f.Add(testBatch{n: 2, pid: 6, epoch: 0, seq: 0, attrs: record.AttrTransactional}.build(f))
	f.Add(testBatch{n: 4, hasCodec: true, codec: kgo.SnappyCompression()}.build(f))
	f.Add(testBatch{n: 4, hasCodec: true, codec: kgo.GzipCompression()}.build(f))
	f.Add(testBatch{n: 4, hasCodec: true, codec: kgo.ZstdCompression()}.build(f))
	f.Add(testBatch{n: 4, hasCodec: true, codec: kgo.Lz4Compression()}.build(f))
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	cfg := DefaultConfig()
	cfg.TimestampBeforeMaxMs = 1 << 62
	cfg.TimestampAfterMaxMs = 1 << 62
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Open(fuzzDir(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// Some inputs are only valid once the CRC matches; try both as sent and fixed.
		inputs := [][]byte{data}
		if len(data) >= record.BatchHeaderSize {
			fixed := append([]byte(nil), data...)
			fixCRC(fixed)
			inputs = append(inputs, fixed)
		}
		for _, in := range inputs {
			sent := append([]byte(nil), in...)
			res, err := l.Append(sent, testNow)
			if err != nil {
				continue
			}
			if res.Duplicate {
				continue
			}
			rr, err := l.Read(res.BaseOffset, 1<<20, true)
			if err != nil {
				t.Fatalf("reading accepted batch: %v", err)
			}
			if !bytes.Equal(rr.Records, sent) {
				t.Fatalf("read back %d bytes, appended %d", len(rr.Records), len(sent))
			}
			// Every accepted batch decodes as a client would decode it.
			decodeBatches(t, rr.Records)
		}
		// And it survives a reopen with recovery.
		l.Close()
		hwm := l.HighWatermark()
		l2, err := Open(l.dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if l2.HighWatermark() != hwm {
			t.Fatalf("hwm %d after reopen, want %d", l2.HighWatermark(), hwm)
		}
	})
}

// fuzzDir is a fresh directory for one fuzz input, on tmpfs (/dev/shm) when
// the machine has it. Every accepted input is sealed on Close, and sealing
// fsyncs: on a cloud disk that throttles bursts of fsyncs, thousands of
// inputs would stall the fuzzer for seconds at a time (CI once failed with
// "context deadline exceeded" that way), while on tmpfs an fsync costs
// nothing. The files are as real either way; durability is what test/crash
// checks, on a real disk.
func fuzzDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "kbroker-fuzz-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
