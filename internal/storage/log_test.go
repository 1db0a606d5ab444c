package storage

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/record"
)

func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	cfg.TimestampBeforeMaxMs = 1 << 62
	return cfg
}

func segmentFiles(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAppendReadRoundTripAcrossSegments(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	var want []string
	for i := 0; i < 100; i++ {
		tag := string(rune('A'+i%26)) + strings.Repeat("x", i%7)
		res := mustAppend(t, l, testBatch{n: 3, valueSize: 100, tag: tag}.build(t))
		if res.BaseOffset != int64(i*3) || res.LastOffset != int64(i*3+2) {
			t.Fatalf("batch %d got offsets [%d,%d]", i, res.BaseOffset, res.LastOffset)
		}
		for j := 0; j < 3; j++ {
			want = append(want, string(value(tag, j, 100)))
		}
	}
	if l.HighWatermark() != 300 {
		t.Fatalf("hwm %d", l.HighWatermark())
	}
	logs := segmentFiles(t, dir, ".log")
	if len(logs) < 5 {
		t.Fatalf("expected many segments, got %d", len(logs))
	}
	for _, p := range logs {
		name := filepath.Base(p)
		if len(name) != 24 {
			t.Errorf("segment name %q is not a 20-digit offset", name)
		}
		if fi, _ := os.Stat(p); fi.Size() > 4096 {
			t.Errorf("segment %s is %d bytes, over segment.bytes", name, fi.Size())
		}
	}
	for _, maxBytes := range []int32{1, 700, 5000, 1 << 20} {
		got := readAll(t, l, 0, maxBytes)
		if len(got) != len(want) {
			t.Fatalf("maxBytes %d: read %d records, want %d", maxBytes, len(got), len(want))
		}
		for i, r := range got {
			if r.offset != int64(i) || r.value != want[i] {
				t.Fatalf("maxBytes %d: record %d = (%d, %q), want (%d, %q)", maxBytes, i, r.offset, r.value, i, want[i])
			}
		}
	}
	// Reading from the middle of a batch returns the whole batch containing it.
	res, err := l.Read(151, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if recs := decodeBatches(t, res.Records); recs[0].offset != 150 {
		t.Fatalf("read at 151 starts at %d, want the batch starting at 150", recs[0].offset)
	}
}

func TestReadMaxBytesAndMinOneBatch(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	b := testBatch{n: 4, valueSize: 200}.build(t)
	size := int32(len(b))
	for i := 0; i < 3; i++ {
		mustAppend(t, l, testBatch{n: 4, valueSize: 200}.build(t))
	}
	cases := []struct {
		maxBytes    int32
		minOne      bool
		wantBatches int
	}{
		{size - 1, true, 1},  // KIP-74: first batch returned even though too large
		{size - 1, false, 0}, // ... but not without minOneBatch
		{0, true, 1},
		{size, false, 1},
		{2*size + size/2, false, 2}, // never a partial batch
		{10 * size, false, 3},
	}
	for _, c := range cases {
		res, err := l.Read(0, c.maxBytes, c.minOne)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Records) / int(size); got != c.wantBatches || len(res.Records)%int(size) != 0 {
			t.Errorf("maxBytes=%d minOne=%v: got %d bytes, want %d batches", c.maxBytes, c.minOne, len(res.Records), c.wantBatches)
		}
		if res.HighWatermark != 12 || res.LogStartOffset != 0 {
			t.Errorf("hwm/logstart %d/%d", res.HighWatermark, res.LogStartOffset)
		}
	}
}

func TestReadOffsetBounds(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	mustAppend(t, l, testBatch{n: 2}.build(t))
	res, err := l.Read(2, 1000, true)
	if err != nil || len(res.Records) != 0 || res.HighWatermark != 2 {
		t.Fatalf("read at hwm: %v, %d bytes, hwm %d", err, len(res.Records), res.HighWatermark)
	}
	for _, off := range []int64{3, -1, 100} {
		if _, err := l.Read(off, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("read at %d: %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

func TestOffsetsAndDataPersistAcrossReopen(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 100, tag: "p"}.build(t))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testBatch{}.build(t), testNow); !errors.Is(err, ErrClosed) {
		t.Fatalf("append on closed log: %v", err)
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read on closed log: %v", err)
	}
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.HighWatermark() != 80 {
		t.Fatalf("hwm after reopen %d", l2.HighWatermark())
	}
	if res := mustAppend(t, l2, testBatch{n: 1}.build(t)); res.BaseOffset != 80 {
		t.Fatalf("next offset after reopen %d", res.BaseOffset)
	}
	if got := readAll(t, l2, 0, 1<<20); len(got) != 81 {
		t.Fatalf("read %d records after reopen", len(got))
	}
}

// crash simulates a killed process: the files stay as written but Close never ran
// (so neither the clean shutdown marker nor the log-end producer snapshot exist;
// snapshots written at rolls do).
func crash(t *testing.T, l *Log) {
	t.Helper()
	hwm := l.HighWatermark()
	l.Close()
	os.Remove(filepath.Join(l.dir, cleanShutdownFile))
	os.Remove(snapshotPath(l.dir, hwm))
}

func lastSegment(t *testing.T, dir string) string {
	logs := segmentFiles(t, dir, ".log")
	return logs[len(logs)-1]
}

func TestTornTailIsTruncated(t *testing.T) {
	for _, tail := range []string{"half-batch", "garbage", "bad-crc", "bad-crc-clean-shutdown-kept"} {
		t.Run(tail, func(t *testing.T) {
			cfg := smallConfig()
			l, dir := openTestLog(t, cfg)
			for i := 0; i < 30; i++ {
				mustAppend(t, l, testBatch{n: 2, valueSize: 100}.build(t))
			}
			hwm := l.HighWatermark()
			last := lastSegment(t, dir)
			fi, _ := os.Stat(last)
			good := fi.Size()
			if tail == "bad-crc-clean-shutdown-kept" {
				l.Close()
			} else {
				crash(t, l)
			}
			f, err := os.OpenFile(last, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := testBatch{n: 3, valueSize: 50}.build(t)
			binary.BigEndian.PutUint64(b, uint64(hwm)) // a plausible next batch
			switch tail {
			case "half-batch":
				f.Write(b[:len(b)/2])
			case "garbage":
				f.Write([]byte(strings.Repeat("\xff garbage", 30)))
			default:
				b[len(b)-1] ^= 0xff // a fully written batch whose bytes are wrong
				f.Write(b)
			}
			f.Close()
			l2, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			want := hwm
			if tail == "bad-crc-clean-shutdown-kept" {
				// After a clean shutdown only headers are checked, so this batch is
				// kept: the marker promises the files were written by us.
				want = hwm + 3
			}
			if l2.HighWatermark() != want {
				t.Fatalf("hwm after recovery %d, want %d", l2.HighWatermark(), want)
			}
			if want != hwm {
				return
			}
			{
				if fi, _ := os.Stat(last); fi.Size() != good {
					t.Fatalf("segment is %d bytes after recovery, want %d", fi.Size(), good)
				}
			}
			if got := readAll(t, l2, 0, 1<<20); int64(len(got)) != want {
				t.Fatalf("read %d records", len(got))
			}
			res := mustAppend(t, l2, testBatch{n: 1}.build(t))
			if res.BaseOffset != want {
				t.Fatalf("append after recovery at %d, want %d", res.BaseOffset, want)
			}
		})
	}
}

func TestCorruptMiddleSegmentDropsLaterSegments(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l, testBatch{n: 1, valueSize: 200}.build(t))
	}
	logs := segmentFiles(t, dir, ".log")
	if len(logs) < 3 {
		t.Fatalf("want >= 3 segments, got %d", len(logs))
	}
	crash(t, l)
	// Segments below a producer snapshot were sealed before it was written and are
	// trusted as Kafka trusts segments below its recovery point; without one,
	// every segment is scanned.
	for _, off := range listSnapshots(dir) {
		os.Remove(snapshotPath(dir, off))
	}
	// Break the header chain in the second segment: a length pointing past the end.
	f, _ := os.OpenFile(logs[1], os.O_RDWR, 0)
	f.WriteAt([]byte{0x7f, 0xff, 0xff, 0xff}, record.PosLength)
	f.Close()
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	base := baseOf(t, logs[1])
	if l2.HighWatermark() != base {
		t.Fatalf("hwm %d, want %d (everything from the corrupt batch on dropped)", l2.HighWatermark(), base)
	}
	if n := len(segmentFiles(t, dir, ".log")); n != 2 {
		t.Fatalf("%d segments left, want 2", n)
	}
	if got := readAll(t, l2, 0, 1<<20); int64(len(got)) != base {
		t.Fatalf("read %d records", len(got))
	}
	if res := mustAppend(t, l2, testBatch{}.build(t)); res.BaseOffset != base {
		t.Fatalf("append at %d", res.BaseOffset)
	}
}

func baseOf(t *testing.T, path string) int64 {
	var b int64
	for _, c := range strings.TrimSuffix(filepath.Base(path), ".log") {
		b = b*10 + int64(c-'0')
	}
	return b
}

func TestDamagedIndexesAreRebuilt(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 90, firstTs: testNow.UnixMilli() + int64(i)}.build(t))
	}
	l.Close()
	idx := segmentFiles(t, dir, ".index")
	tidx := segmentFiles(t, dir, ".timeindex")
	os.WriteFile(idx[0], []byte("garbage!garbage!"), 0o644)       // well-sized but nonsense
	os.WriteFile(idx[1], []byte("xyz"), 0o644)                    // bad size
	os.Remove(tidx[2])                                            // missing
	os.WriteFile(idx[len(idx)-1], make([]byte, 80), 0o644)        // active segment's index zeroed
	os.WriteFile(tidx[len(tidx)-1], []byte("nonsense!!!"), 0o644) // and its time index
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for off := int64(0); off < l2.HighWatermark(); off += 7 {
		res, err := l2.Read(off, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		recs := decodeBatches(t, res.Records)
		if recs[0].offset > off || recs[len(recs)-1].offset < off {
			t.Fatalf("read at %d returned offsets %d..%d", off, recs[0].offset, recs[len(recs)-1].offset)
		}
	}
	off, _, ok, err := l2.OffsetForTimestamp(testNow.UnixMilli() + 30)
	if err != nil || !ok || off != 60 {
		t.Fatalf("OffsetForTimestamp after index rebuild: %d %v %v", off, ok, err)
	}
	if fi, _ := os.Stat(idx[1]); fi.Size()%offsetEntrySize != 0 {
		t.Fatalf("index not rewritten")
	}
}

func TestAppendValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxMessageBytes = 2000
	l, _ := openTestLog(t, cfg)
	good := func() []byte { return testBatch{n: 3, valueSize: 10}.build(t) }
	cases := []struct {
		name   string
		mutate func() []byte
		want   error
	}{
		{"bad crc", func() []byte { b := good(); b[len(b)-1] ^= 1; return b }, record.ErrCorruptMessage},
		// Kafka's batch reader finds no complete batch: INVALID_RECORD.
		{"truncated", func() []byte { b := good(); return b[:len(b)-5] }, record.ErrInvalidRecord},
		{"too short", func() []byte { return good()[:20] }, record.ErrInvalidRecord},
		{"trailing bytes", func() []byte { return append(good(), good()...) }, record.ErrInvalidRecord},
		{"magic 1", func() []byte { b := good(); b[record.PosMagic] = 1; fixCRC(b); return b }, record.ErrInvalidRecord},
		{"magic 0", func() []byte { b := good(); b[record.PosMagic] = 0; fixCRC(b); return b }, record.ErrInvalidRecord},
		{"too large", func() []byte { return testBatch{n: 3, valueSize: 1000}.build(t) }, record.ErrMessageTooLarge},
		{"nonzero base offset", func() []byte { b := good(); b[7] = 5; return b }, record.ErrInvalidRecord},
		{"count mismatch", func() []byte { b := good(); b[record.PosNumRecords+3] = 2; fixCRC(b); return b }, record.ErrInvalidRecord},
		{"more records than declared", func() []byte {
			b := good()
			b[record.PosNumRecords+3], b[record.PosLastOffsetDelta+3] = 2, 1
			fixCRC(b)
			return b
		}, record.ErrInvalidRecord}, // Kafka: "records still remaining in file"
		{"zero records", func() []byte {
			b := good()
			b[record.PosNumRecords+3], b[record.PosLastOffsetDelta+3] = 0, 0xff
			for i := record.PosLastOffsetDelta; i < record.PosLastOffsetDelta+3; i++ {
				b[i] = 0xff
			}
			fixCRC(b)
			return b
		}, record.ErrInvalidRecord},
		{"control batch", func() []byte { return testBatch{attrs: record.AttrControl}.build(t) }, record.ErrInvalidRecord},
		{"transactional without producer id", func() []byte { return testBatch{attrs: record.AttrTransactional}.build(t) }, record.ErrInvalidRecord},
		{"negative sequence", func() []byte { return testBatch{pid: 7, epoch: 0, seq: -5}.build(t) }, record.ErrInvalidRecord},
		{"timestamp too new", func() []byte { return testBatch{firstTs: testNow.UnixMilli() + 3600001}.build(t) }, record.ErrInvalidTimestamp},
		{"producer sets LogAppendTime", func() []byte { return testBatch{attrs: record.AttrLogAppendTime}.build(t) }, record.ErrInvalidTimestamp},
		{"unknown codec", func() []byte { b := good(); b[record.PosAttributes+1] |= 5; fixCRC(b); return b }, record.ErrUnsupportedCompressionType},
		{"bad compressed data", func() []byte {
			b := good()
			b[record.PosAttributes+1] |= byte(record.CodecGzip)
			fixCRC(b)
			return b
		}, record.ErrCorruptMessage},
		{"offset delta not 0..n-1", func() []byte {
			b := good()
			// record 0 starts at 61: length varint (1 byte), attributes, ts delta (1 byte), offset delta
			b[record.BatchHeaderSize+3] = 4 // zigzag 2
			fixCRC(b)
			return b
		}, record.ErrInvalidRecord},
	}
	for _, c := range cases {
		_, err := l.Append(c.mutate(), testNow)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if l.HighWatermark() != 0 {
		t.Fatalf("rejected batches were written: hwm %d", l.HighWatermark())
	}
	// Timestamp bounds are relative to the broker clock and configurable.
	cfg.TimestampBeforeMaxMs = 1000
	l.SetConfig(cfg)
	if _, err := l.Append(testBatch{firstTs: testNow.UnixMilli() - 1001}.build(t), testNow); !errors.Is(err, record.ErrInvalidTimestamp) {
		t.Fatalf("old timestamp: %v", err)
	}
	mustAppend(t, l, testBatch{firstTs: testNow.UnixMilli() - 1000}.build(t))
	// NO_TIMESTAMP records are exempt.
	mustAppend(t, l, testBatch{firstTs: -1, maxTs: -1}.build(t))
}

func TestCompressedBatchesStoredAsProduced(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			l, _ := openTestLog(t, DefaultConfig())
			mustAppend(t, l, testBatch{n: 2}.build(t))
			b := testBatch{n: 20, valueSize: 300, tag: name, hasCodec: true, codec: codec, tsStep: 3}.build(t)
			if b[record.PosAttributes+1]&7 == 0 {
				t.Fatalf("test batch not compressed")
			}
			records := append([]byte(nil), b[record.BatchHeaderSize:]...)
			res := mustAppend(t, l, b)
			if res.BaseOffset != 2 || res.LastOffset != 21 {
				t.Fatalf("offsets %d-%d", res.BaseOffset, res.LastOffset)
			}
			rr, err := l.Read(2, 1<<20, true)
			if err != nil {
				t.Fatal(err)
			}
			if string(rr.Records[record.BatchHeaderSize:]) != string(records) {
				t.Fatalf("compressed records were not stored as produced")
			}
			got := decodeBatches(t, rr.Records)
			if len(got) != 20 || got[19].offset != 21 || got[5].value != string(value(name, 5, 300)) {
				t.Fatalf("decoded %d records: %+v", len(got), got[0])
			}
			off, ts, ok, err := l.OffsetForTimestamp(testNow.UnixMilli() + 10)
			if err != nil || !ok || off != 2+4 || ts != testNow.UnixMilli()+12 {
				t.Fatalf("OffsetForTimestamp in compressed batch: %d %d %v %v", off, ts, ok, err)
			}
		})
	}
}

func TestCreateTimeMaxTimestampIsRecomputed(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	// A producer that sends a wrong batch max timestamp: Kafka stores the real max.
	mustAppend(t, l, testBatch{n: 3, tsStep: 10, maxTs: testNow.UnixMilli() + 1}.build(t))
	rr, _ := l.Read(0, 1<<20, true)
	if got := int64(beUint64(rr.Records[record.PosMaxTimestamp:])); got != testNow.UnixMilli()+20 {
		t.Fatalf("max timestamp %d", got)
	}
	decodeBatches(t, rr.Records) // checks the CRC was recomputed
}

func beUint64(b []byte) uint64 {
	return binary.BigEndian.Uint64(b)
}

func TestLogAppendTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TimestampType = LogAppendTime
	l, _ := openTestLog(t, cfg)
	now := testNow.Add(time.Hour * 5) // producer timestamps far off are fine with LogAppendTime
	res, err := l.Append(testBatch{n: 3, tsStep: 5}.build(t), now)
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("LogAppendTime %d", res.LogAppendTime)
	}
	rr, _ := l.Read(0, 1<<20, true)
	if rr.Records[record.PosAttributes+1]&record.AttrLogAppendTime == 0 {
		t.Fatalf("timestamp type attribute not set")
	}
	for _, r := range decodeBatches(t, rr.Records) {
		if r.ts != now.UnixMilli() {
			t.Fatalf("record timestamp %d, want log append time", r.ts)
		}
	}
	off, ts, err := l.MaxTimestamp()
	if err != nil || off != 0 || ts != now.UnixMilli() {
		t.Fatalf("MaxTimestamp %d %d %v", off, ts, err)
	}
	// CreateTime topics report -1.
	cfg.TimestampType = CreateTime
	l.SetConfig(cfg)
	if res := mustAppend(t, l, testBatch{}.build(t)); res.LogAppendTime != -1 {
		t.Fatalf("CreateTime LogAppendTime %d", res.LogAppendTime)
	}
}

func TestRetentionByTime(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionMs = 60_000
	l, dir := openTestLog(t, cfg)
	old := testNow.UnixMilli() - 120_000
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 200, firstTs: old}.build(t))
	}
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 200}.build(t))
	}
	before := len(segmentFiles(t, dir, ".log"))
	n, err := l.EnforceRetention(testNow)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || len(segmentFiles(t, dir, ".log")) != before-n {
		t.Fatalf("deleted %d of %d segments", n, before)
	}
	start := l.LogStartOffset()
	if start == 0 || start > 60 {
		t.Fatalf("log start %d", start)
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if got := readAll(t, l, start, 1<<20); int64(len(got)) != 120-start {
		t.Fatalf("read %d records from %d", len(got), start)
	}
	// Everything expires: the active segment is rolled first, then deleted; the
	// log keeps its offsets.
	later := testNow.Add(10 * time.Minute)
	if _, err := l.EnforceRetention(later); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 120 || l.HighWatermark() != 120 || l.Size() != 0 {
		t.Fatalf("after full expiry: start %d hwm %d size %d", l.LogStartOffset(), l.HighWatermark(), l.Size())
	}
	if res, err := l.Append(testBatch{}.build(t), later); err != nil || res.BaseOffset != 120 || res.LogStartOffset != 120 {
		t.Fatalf("append after full expiry: %+v %v", res, err)
	}
	// Retention survives a reopen: offsets continue.
	l.Close()
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 120 || l2.HighWatermark() != 121 {
		t.Fatalf("reopen: start %d hwm %d", l2.LogStartOffset(), l2.HighWatermark())
	}
}

func TestRetentionByBytes(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 10000
	l, _ := openTestLog(t, cfg)
	for i := 0; i < 80; i++ {
		mustAppend(t, l, testBatch{n: 1, valueSize: 300}.build(t))
	}
	total := l.Size()
	n, err := l.EnforceRetention(testNow)
	if err != nil || n == 0 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	// Kafka deletes oldest segments only while the log stays at or above
	// retention.bytes, so up to one segment more than the limit remains.
	if l.Size() < 10000 || l.Size() >= 10000+4096 {
		t.Fatalf("size %d after retention (was %d)", l.Size(), total)
	}
	if got := readAll(t, l, l.LogStartOffset(), 1<<20); int64(len(got)) != 80-l.LogStartOffset() {
		t.Fatalf("read %d", len(got))
	}
}

func TestSegmentMsRolls(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	l, dir := openTestLog(t, cfg)
	mustAppend(t, l, testBatch{}.build(t))
	// A batch whose timestamp is segment.ms past the segment's first batch rolls.
	if _, err := l.Append(testBatch{firstTs: testNow.UnixMilli() + 1500}.build(t), testNow.Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n := len(segmentFiles(t, dir, ".log")); n != 2 {
		t.Fatalf("%d segments after time-based roll on append", n)
	}
	// Retention checks roll an idle active segment too.
	if _, err := l.EnforceRetention(testNow.Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := len(segmentFiles(t, dir, ".log")); n != 3 {
		t.Fatalf("%d segments after time-based roll in retention", n)
	}
	// An empty active segment is never rolled.
	l.EnforceRetention(testNow.Add(time.Minute))
	if n := len(segmentFiles(t, dir, ".log")); n != 3 {
		t.Fatalf("%d segments: empty segment rolled", n)
	}
}

func TestOffsetForTimestampAcrossSegments(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	base := testNow.UnixMilli()
	// 50 batches of 4 records, timestamps base + 10*offset.
	for i := 0; i < 50; i++ {
		mustAppend(t, l, testBatch{n: 4, valueSize: 100, firstTs: base + int64(i*40), tsStep: 10}.build(t))
	}
	cases := []struct {
		ts      int64
		off     int64
		ok      bool
		foundTs int64
	}{
		{base - 100, 0, true, base},
		{base, 0, true, base},
		{base + 1, 1, true, base + 10},
		{base + 1005, 101, true, base + 1010},
		{base + 1990, 199, true, base + 1990},
		{base + 1991, 0, false, 0},
	}
	for _, c := range cases {
		off, ts, ok, err := l.OffsetForTimestamp(c.ts)
		if err != nil || ok != c.ok || (ok && (off != c.off || ts != c.foundTs)) {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", c.ts-base, off, ts-base, ok, err, c.off, c.foundTs-base, c.ok)
		}
	}
	off, ts, err := l.MaxTimestamp()
	if err != nil || off != 199 || ts != base+1990 {
		t.Fatalf("MaxTimestamp = %d, %d, %v", off, ts-base, err)
	}
}

func TestMaxTimestampNotLast(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	base := testNow.UnixMilli()
	for i := 0; i < 30; i++ {
		ts := base + int64(i)
		if i == 7 {
			ts = base + 100000
		}
		mustAppend(t, l, testBatch{n: 3, valueSize: 200, firstTs: ts, tsDeltas: []int64{0, 5, 2}}.build(t))
	}
	check := func(l *Log) {
		off, ts, err := l.MaxTimestamp()
		if err != nil || off != 7*3+1 || ts != base+100005 {
			t.Fatalf("MaxTimestamp = %d, %d, %v", off, ts-base, err)
		}
	}
	check(l)
	l.Close()
	l2, err := Open(dir, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	check(l2)
	if off, ts, err := (&Log{}).emptyMax(t); off != -1 || ts != -1 || err != nil {
		t.Fatal("empty log max timestamp")
	}
}

func (*Log) emptyMax(t *testing.T) (int64, int64, error) {
	l, _ := openTestLog(t, DefaultConfig())
	return l.MaxTimestamp()
}

// An append no one waits for keeps the channel (no allocation per batch),
// and the channel Changed hands out afterwards is still open until the next
// append.
func TestChangedAfterUnwatchedAppends(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	for range 3 {
		mustAppend(t, l, testBatch{}.build(t))
	}
	ch := l.Changed()
	select {
	case <-ch:
		t.Fatal("a channel taken after the appends is already closed")
	default:
	}
	mustAppend(t, l, testBatch{}.build(t))
	select {
	case <-ch:
	default:
		t.Fatal("the next append did not close the channel taken")
	}
	if allocs := testing.AllocsPerRun(10, func() { l.notify() }); allocs != 0 {
		t.Fatalf("an append's wake-up with no channel taken allocated %v times", allocs)
	}
}

func TestChangedFiresOnAppend(t *testing.T) {
	l, _ := openTestLog(t, DefaultConfig())
	ch := l.Changed()
	select {
	case <-ch:
		t.Fatal("fired before append")
	default:
	}
	done := make(chan struct{})
	go func() { <-ch; close(done) }()
	if _, err := l.Append(testBatch{}.build(t), testNow); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed did not fire")
	}
	ch2 := l.Changed()
	if ch2 == ch {
		t.Fatal("channel not replaced")
	}
	// A rejected append does not fire.
	l.Append([]byte("junk"), testNow)
	select {
	case <-ch2:
		t.Fatal("fired on a failed append")
	default:
	}
	l.Close()
	select {
	case <-ch2:
	default:
		t.Fatal("Close did not wake waiters")
	}
}

func TestConcurrentReadersDuringAppendsAndRetention(t *testing.T) {
	testConcurrentReadersDuringAppendsAndRetention(t)
}

func testConcurrentReadersDuringAppendsAndRetention(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 20000
	l, _ := openTestLog(t, cfg)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start, hwm := l.LogStartOffset(), l.HighWatermark()
				for off := start; off < hwm; off += 5 {
					res, err := l.Read(off, 2000, true)
					if errors.Is(err, ErrOffsetOutOfRange) {
						break // retention got there first
					}
					if err != nil {
						t.Error(err)
						return
					}
					recs := decodeBatches(t, res.Records)
					if len(recs) == 0 || recs[0].offset > off || res.HighWatermark < recs[len(recs)-1].offset+1 {
						t.Errorf("read at %d: bad records", off)
						return
					}
				}
				l.OffsetForTimestamp(testNow.UnixMilli())
				l.MaxTimestamp()
			}
		}()
	}
	for i := 0; i < 400; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 100}.build(t))
		if i%50 == 0 {
			if _, err := l.EnforceRetention(testNow); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}
