package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/record"
)

func compactConfig() Config {
	cfg := smallConfig()
	cfg.CleanupPolicy = CleanupPolicy{Compact: true}
	return cfg
}

// rollNow rolls the active segment, as segment.bytes or segment.ms would.
func rollNow(t *testing.T, l *Log) {
	t.Helper()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if _, err := l.roll(); err != nil {
		t.Fatal(err)
	}
}

func mustClean(t *testing.T, l *Log, now time.Time) CleanResult {
	t.Helper()
	res, err := l.Clean(now)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return res
}

// fetchedBatch is one batch of a fetch, with its records as a client decodes them.
type fetchedBatch struct {
	base, last int64
	attrs      int16
	firstTs    int64
	pid        int64
	seq        int32
	recs       []readRecord
}

// readBatches reads the whole log batch by batch; unlike readAll it accepts
// batches that compaction emptied.
func readBatches(t *testing.T, l *Log) []fetchedBatch {
	t.Helper()
	var out []fetchedBatch
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		res, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("read at %d returned nothing (hwm %d)", off, l.HighWatermark())
		}
		for b := res.Records; len(b) > 0; {
			size := int(int32(binary.BigEndian.Uint32(b[record.PosLength:]))) + record.LogOverhead
			h, _ := record.ParseHeader(b)
			fb := fetchedBatch{base: h.BaseOffset, last: h.LastOffset, attrs: h.Attributes,
				firstTs: int64(binary.BigEndian.Uint64(b[record.PosFirstTimestamp:])), pid: h.ProducerID, seq: h.BaseSequence,
				recs: decodeBatches(t, b[:size])}
			if h.LastOffset >= off {
				out = append(out, fb)
			}
			off = h.LastOffset + 1
			b = b[size:]
		}
	}
	return out
}

func records(bs []fetchedBatch) []readRecord {
	var out []readRecord
	for _, b := range bs {
		out = append(out, b.recs...)
	}
	return out
}

// appendKeyed appends n single-record batches cycling over keys k0..k<keys-1>,
// value "v<offset>", and returns what was appended at each offset.
func appendKeyed(t *testing.T, l *Log, n, keys int) map[int64]kv {
	t.Helper()
	written := map[int64]kv{}
	for i := 0; i < n; i++ {
		off := l.HighWatermark()
		r := rec(fmt.Sprintf("k%d", i%keys), fmt.Sprintf("v%d-%s", off, strings.Repeat("x", 100)))
		mustAppend(t, l, testBatch{recs: []kv{r}}.build(t))
		written[off] = r
	}
	return written
}

// wantCompacted is the model: below upTo only the last record per key survives,
// from upTo on everything.
func wantCompacted(written map[int64]kv, upTo, hwm int64) []int64 {
	last := map[string]int64{}
	for off := int64(0); off < upTo; off++ {
		if r, ok := written[off]; ok {
			last[string(r.key)] = off
		}
	}
	var out []int64
	for off := int64(0); off < hwm; off++ {
		r, ok := written[off]
		if !ok {
			continue
		}
		if off >= upTo || last[string(r.key)] == off {
			out = append(out, off)
		}
	}
	return out
}

func checkRecords(t *testing.T, got []readRecord, written map[int64]kv, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := written[want[i]]
		if r.offset != want[i] || r.key != string(w.key) || r.value != string(w.value) || r.null != (w.value == nil) {
			t.Fatalf("record %d = (%d, %q, %q, null=%v), want (%d, %q, %q)", i, r.offset, r.key, r.value, r.null, want[i], w.key, w.value)
		}
	}
}

func TestCompactionKeepsLatestPerKeyAcrossSegments(t *testing.T) {
	l, dir := openTestLog(t, compactConfig())
	written := appendKeyed(t, l, 200, 7)
	segsBefore := len(segmentFiles(t, dir, ".log"))
	if segsBefore < 5 {
		t.Fatalf("want several segments, got %d", segsBefore)
	}
	active := l.active()
	activeBytes, _ := os.ReadFile(active.path + ".log")
	hwm, start, size := l.HighWatermark(), l.LogStartOffset(), l.Size()

	res := mustClean(t, l, testNow)
	if res.EndOffset != active.base || res.SegmentsCleaned != segsBefore-1 {
		t.Fatalf("cleaned %+v, want up to the active segment's base %d over %d segments", res, active.base, segsBefore-1)
	}
	if l.HighWatermark() != hwm || l.LogStartOffset() != start {
		t.Fatalf("offsets moved: hwm %d start %d", l.HighWatermark(), l.LogStartOffset())
	}
	if l.Size() > size/5 {
		t.Fatalf("log is %d bytes after cleaning, was %d", l.Size(), size)
	}
	want := wantCompacted(written, active.base, hwm)
	checkRecords(t, records(readBatches(t, l)), written, want)
	// The active segment is not touched.
	if b, _ := os.ReadFile(active.path + ".log"); !bytes.Equal(b, activeBytes) || l.active() != active {
		t.Fatal("the active segment changed")
	}
	// Appends continue at the same offset, and a second round is a no-op.
	if r := mustAppend(t, l, testBatch{recs: []kv{rec("k0", "after")}}.build(t)); r.BaseOffset != hwm {
		t.Fatalf("append at %d, want %d", r.BaseOffset, hwm)
	}
	written[hwm] = rec("k0", "after")
	if res := mustClean(t, l, testNow); res.SegmentsCleaned != 0 {
		t.Fatalf("second round cleaned %+v with nothing dirty", res)
	}
	// Segments are grouped by their size before cleaning (Kafka's
	// groupSegmentsBySize), so the small cleaned ones merge in the next round.
	if n := len(segmentFiles(t, dir, ".log")); n != segsBefore {
		t.Fatalf("%d segments after the first round, want %d", n, segsBefore)
	}
	// The cleaned files are what a reopened log reads (after a crash, too).
	crash(t, l)
	l2, err := Open(dir, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	want = append(want, hwm)
	checkRecords(t, records(readBatches(t, l2)), written, want)
	if l2.firstDirty.Load() != active.base {
		t.Fatalf("cleaner checkpoint %d after reopen, want %d", l2.firstDirty.Load(), active.base)
	}
	for off, r := range appendKeyed(t, l2, 40, 7) {
		written[off] = r
	}
	mustClean(t, l2, testNow)
	if n := len(segmentFiles(t, dir, ".log")); n >= segsBefore {
		t.Fatalf("%d segments after the second round, want the cleaned ones merged (had %d)", n, segsBefore)
	}
	checkRecords(t, records(readBatches(t, l2)), written, wantCompacted(written, l2.active().base, l2.HighWatermark()))
}

func TestCompactionRespectsMinCompactionLag(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCompactionLagMs = time.Hour.Milliseconds()
	l, _ := openTestLog(t, cfg)
	written := appendKeyed(t, l, 60, 3)
	if res := mustClean(t, l, testNow); res.SegmentsCleaned != 0 {
		t.Fatalf("cleaned records younger than min.compaction.lag.ms: %+v", res)
	}
	later := testNow.Add(2 * time.Hour)
	if res := mustClean(t, l, later); res.SegmentsCleaned == 0 {
		t.Fatal("nothing cleaned once the lag passed")
	}
	checkRecords(t, records(readBatches(t, l)), written, wantCompacted(written, l.active().base, l.HighWatermark()))
}

func TestCleanerRunsOnDirtyRatioOrMaxCompactionLag(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.99
	l, _ := openTestLog(t, cfg)
	appendKeyed(t, l, 100, 100)
	mustClean(t, l, testNow) // a clean head of 100 distinct keys
	appendKeyed(t, l, 30, 30)
	if res, err := l.clean(testNow, false); err != nil || res.SegmentsCleaned != 0 {
		t.Fatalf("cleaned below min.cleanable.dirty.ratio: %+v %v", res, err)
	}
	cfg.MaxCompactionLagMs = time.Minute.Milliseconds()
	l.SetConfig(cfg)
	if res, err := l.clean(testNow, false); err != nil || res.SegmentsCleaned != 0 {
		t.Fatalf("cleaned before max.compaction.lag.ms passed: %+v %v", res, err)
	}
	if res, err := l.clean(testNow.Add(2*time.Minute), false); err != nil || res.SegmentsCleaned == 0 {
		t.Fatalf("not cleaned after max.compaction.lag.ms: %+v %v", res, err)
	}
	cfg.MaxCompactionLagMs = DefaultConfig().MaxCompactionLagMs
	cfg.MinCleanableDirtyRatio = 0.3
	l.SetConfig(cfg)
	appendKeyed(t, l, 60, 3)
	if res, err := l.clean(testNow, false); err != nil || res.SegmentsCleaned == 0 {
		t.Fatalf("not cleaned above min.cleanable.dirty.ratio: %+v %v", res, err)
	}
}

func TestCompactionRemovesTombstonesOnlyAfterDeleteRetention(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l, _ := openTestLog(t, cfg)
	mustAppend(t, l, testBatch{recs: []kv{rec("a", "1"), rec("b", "1")}}.build(t))
	mustAppend(t, l, testBatch{recs: []kv{tombstone("a"), rec("c", "1")}}.build(t))
	rollNow(t, l)
	find := func(key string) (readRecord, fetchedBatch, bool) {
		for _, b := range readBatches(t, l) {
			for _, r := range b.recs {
				if r.key == key {
					return r, b, true
				}
			}
		}
		return readRecord{}, fetchedBatch{}, false
	}
	mustClean(t, l, testNow)
	r, b, ok := find("a")
	if !ok || !r.null || r.offset != 2 {
		t.Fatalf("after the first round key a is %+v (found %v), want the tombstone at offset 2", r, ok)
	}
	horizon := testNow.UnixMilli() + 1000
	if b.attrs&record.AttrDeleteHorizon == 0 || b.firstTs != horizon {
		t.Fatalf("tombstone batch attrs %#x first timestamp %d, want the delete horizon %d", b.attrs, b.firstTs, horizon)
	}
	if r.ts != testNow.UnixMilli() {
		t.Fatalf("tombstone timestamp %d after setting the horizon, want %d", r.ts, testNow.UnixMilli())
	}
	// Before the horizon the tombstone survives further rounds.
	mustAppend(t, l, testBatch{recs: []kv{rec("d", "1")}}.build(t))
	rollNow(t, l)
	mustClean(t, l, testNow.Add(999*time.Millisecond))
	if r, _, ok := find("a"); !ok || !r.null {
		t.Fatal("tombstone removed before delete.retention.ms")
	}
	mustAppend(t, l, testBatch{recs: []kv{rec("e", "1")}}.build(t))
	rollNow(t, l)
	mustClean(t, l, testNow.Add(1001*time.Millisecond))
	if r, _, ok := find("a"); ok {
		t.Fatalf("tombstone still there after delete.retention.ms: %+v", r)
	}
	var keys []string
	for _, r := range records(readBatches(t, l)) {
		keys = append(keys, r.key+"="+r.value)
	}
	if got := strings.Join(keys, ","); got != "b=1,c=1,d=1,e=1" {
		t.Fatalf("log holds %s", got)
	}
}

func TestCompactOnlyPolicyIgnoresRetention(t *testing.T) {
	cfg := compactConfig()
	cfg.RetentionMs = 1
	cfg.RetentionBytes = 1
	l, dir := openTestLog(t, cfg)
	appendKeyed(t, l, 100, 10)
	before := len(segmentFiles(t, dir, ".log"))
	if n, err := l.EnforceRetention(testNow.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("compact-only retention deleted %d segments (%v)", n, err)
	}
	if l.LogStartOffset() != 0 || len(segmentFiles(t, dir, ".log")) != before {
		t.Fatal("compact-only log lost segments")
	}
	cfg.CleanupPolicy.Delete = true
	l.SetConfig(cfg)
	if n, err := l.EnforceRetention(testNow.Add(time.Hour)); err != nil || n == 0 {
		t.Fatalf("compact,delete retention deleted %d segments (%v)", n, err)
	}
}

func TestKeylessRecordRejectedOnCompactedTopic(t *testing.T) {
	for _, policy := range []CleanupPolicy{{Compact: true}, {Compact: true, Delete: true}} {
		cfg := smallConfig()
		cfg.CleanupPolicy = policy
		l, _ := openTestLog(t, cfg)
		for _, codec := range []bool{false, true} {
			raw := testBatch{recs: []kv{rec("k", "v"), {value: []byte("no key")}}, codec: kgo.GzipCompression(), hasCodec: codec}.build(t)
			_, err := l.Append(raw, testNow)
			if !errors.Is(err, record.ErrInvalidRecord) || !strings.Contains(err.Error(), "without key") {
				t.Fatalf("policy %+v compressed=%v: keyless record gave %v, want INVALID_RECORD", policy, codec, err)
			}
		}
		if l.HighWatermark() != 0 {
			t.Fatal("a rejected batch was written")
		}
	}
	l, _ := openTestLog(t, smallConfig())
	mustAppend(t, l, testBatch{recs: []kv{{value: []byte("no key")}}}.build(t))
}

func TestCompactionOfCompressedBatches(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			l, _ := openTestLog(t, compactConfig())
			written := map[int64]kv{}
			for i := 0; i < 40; i++ {
				var recs []kv
				for j := 0; j < 4; j++ {
					recs = append(recs, rec(fmt.Sprintf("k%d", (i*4+j)%9), strings.Repeat(fmt.Sprintf("v%d-%d;", i, j), 10)))
				}
				res := mustAppend(t, l, testBatch{recs: recs, codec: codec, hasCodec: true}.build(t))
				for j, r := range recs {
					written[res.BaseOffset+int64(j)] = r
				}
			}
			active := l.active().base
			mustClean(t, l, testNow)
			batches := readBatches(t, l)
			checkRecords(t, records(batches), written, wantCompacted(written, active, l.HighWatermark()))
			rebuilt := 0
			for _, b := range batches {
				if len(b.recs) == 0 {
					continue
				}
				if c := record.Codec(b.attrs & record.AttrCompressionMask); c == record.CodecNone {
					t.Fatalf("batch at %d lost its compression", b.base)
				}
				if b.last-b.base != 3 {
					t.Fatalf("batch at %d spans %d offsets, want its original 4", b.base, b.last-b.base+1)
				}
				if len(b.recs) < 4 {
					rebuilt++
				}
			}
			if rebuilt == 0 {
				t.Fatal("no batch was rebuilt with fewer records")
			}
		})
	}
}

// The last batch of an idempotent producer stays (emptied) so that its sequence
// is still known after the records are compacted away and the log reopened.
func TestCompactionKeepsProducersLastBatchEmpty(t *testing.T) {
	l, dir := openTestLog(t, compactConfig())
	mustAppend(t, l, testBatch{recs: []kv{rec("k", "from producer")}, pid: 7, epoch: 1, seq: 0}.build(t))
	mustAppend(t, l, testBatch{recs: []kv{rec("k", "newer")}}.build(t))
	mustAppend(t, l, testBatch{recs: []kv{rec("x", "1")}}.build(t))
	rollNow(t, l)
	mustClean(t, l, testNow)
	bs := readBatches(t, l)
	if len(bs) != 3 || bs[0].pid != 7 || len(bs[0].recs) != 0 || bs[0].base != 0 || bs[0].last != 0 {
		t.Fatalf("batches after cleaning: %+v", bs)
	}
	crash(t, l)
	for _, off := range listSnapshots(dir) {
		os.Remove(snapshotPath(dir, off)) // rebuild producer state from the log itself
	}
	l2, err := Open(dir, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.Append(testBatch{recs: []kv{rec("k", "x")}, pid: 7, epoch: 1, seq: 5}.build(t), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("out-of-sequence batch after compaction and reopen: %v", err)
	}
	mustAppend(t, l2, testBatch{recs: []kv{rec("k", "x")}, pid: 7, epoch: 1, seq: 1}.build(t))
}

// copyDir copies a log directory's files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(to, 0o755)
	for _, e := range ents {
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(dst, src)
		src.Close()
		dst.Close()
	}
}

func TestCrashMidSwapRecovers(t *testing.T) {
	// before: a closed log with 2+ closed segments; after: the same log cleaned.
	root := t.TempDir()
	before, after := filepath.Join(root, "before"), filepath.Join(root, "after")
	cfg := compactConfig()
	cfg.SegmentBytes = 2048
	l, err := Open(before, cfg)
	if err != nil {
		t.Fatal(err)
	}
	written := appendKeyed(t, l, 40, 4)
	firstBase := l.segs[0].base
	var sources []string
	for _, s := range l.segs[:len(l.segs)-1] {
		sources = append(sources, filepath.Base(s.path))
	}
	hwm, activeBase := l.HighWatermark(), l.active().base
	l.Close()
	copyDir(t, before, after)
	cfg.SegmentBytes = 1 << 20 // so that every closed segment is cleaned into one
	la, err := Open(after, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustClean(t, la, testNow); res.SegmentsCleaned != len(sources) {
		t.Fatalf("cleaned %+v, want the %d closed segments in one group", res, len(sources))
	}
	la.Close()
	if len(sources) < 2 {
		t.Fatalf("want 2+ source segments, got %d", len(sources))
	}
	all := make([]int64, 0, hwm)
	for off := int64(0); off < hwm; off++ {
		all = append(all, off)
	}
	compacted := wantCompacted(written, activeBase, hwm)
	first := fmt.Sprintf("%020d", firstBase)
	cleaned := func(ext string) []byte {
		b, err := os.ReadFile(filepath.Join(after, first+ext))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name  string
		setup func(dir string)
		want  []int64
	}{
		{"cleaned files left", func(dir string) {
			os.WriteFile(filepath.Join(dir, first+".log.cleaned"), cleaned(".log")[:100], 0o644)
			os.WriteFile(filepath.Join(dir, first+".index.cleaned"), cleaned(".index"), 0o644)
		}, all},
		{"index renamed to swap, log still cleaned", func(dir string) {
			os.WriteFile(filepath.Join(dir, first+".log.cleaned"), cleaned(".log"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".index.swap"), cleaned(".index"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".timeindex.swap"), cleaned(".timeindex"), 0o644)
		}, all},
		{"swap committed, sources still there", func(dir string) {
			os.WriteFile(filepath.Join(dir, first+".log.swap"), cleaned(".log"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".index.swap"), cleaned(".index"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".timeindex.swap"), cleaned(".timeindex"), 0o644)
		}, compacted},
		{"swap committed, some sources deleted, index in place", func(dir string) {
			for _, s := range sources[1:2] {
				for _, ext := range segmentExts {
					os.Remove(filepath.Join(dir, s+ext))
				}
			}
			os.WriteFile(filepath.Join(dir, first+".log.swap"), cleaned(".log"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".index"), cleaned(".index"), 0o644)
			os.WriteFile(filepath.Join(dir, first+".timeindex"), cleaned(".timeindex"), 0o644)
		}, compacted},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprint("case", i))
			copyDir(t, before, dir)
			os.Remove(filepath.Join(dir, cleanShutdownFile))
			tc.setup(dir)
			l, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			checkRecords(t, records(readBatches(t, l)), written, tc.want)
			if l.HighWatermark() != hwm {
				t.Fatalf("hwm %d, want %d", l.HighWatermark(), hwm)
			}
			for _, p := range append(segmentFiles(t, dir, ".cleaned"), segmentFiles(t, dir, ".swap")...) {
				t.Errorf("%s left after recovery", filepath.Base(p))
			}
			if off, _, ok, err := l.OffsetForTimestamp(0); err != nil || !ok || off != tc.want[0] {
				t.Fatalf("first offset by time %d (%v %v), want %d", off, ok, err, tc.want[0])
			}
		})
	}
}

func TestManagerRunCleanerCompactsDueLogs(t *testing.T) {
	m, err := OpenManager([]string{t.TempDir()}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := compactConfig()
	l, err := m.Log("compacted", 0, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.Log("plain", 0, [16]byte{2}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendKeyed(t, l, 100, 3)
	appendKeyed(t, plain, 100, 3)
	plainSize := plain.Size()
	before := l.Size()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.RunCleaner(ctx, 5*time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.Size() >= before/2 {
		if time.Now().After(deadline) {
			t.Fatalf("log not compacted: %d bytes, was %d", l.Size(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if plain.Size() != plainSize {
		t.Fatal("the cleaner touched a log whose policy is delete")
	}
}

func TestConcurrentReadsDuringCompaction(t *testing.T) {
	cfg := compactConfig()
	cfg.CleanupPolicy.Delete = true
	cfg.RetentionBytes = 30000
	cfg.MinCleanableDirtyRatio = 0.1
	l, _ := openTestLog(t, cfg)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for off := l.LogStartOffset(); off < l.HighWatermark(); {
					res, err := l.Read(off, 3000, true)
					if errors.Is(err, ErrOffsetOutOfRange) {
						break
					}
					if err != nil {
						t.Error(err)
						return
					}
					recs := decodeBatches(t, res.Records)
					for _, r := range recs {
						if !strings.HasPrefix(r.value, fmt.Sprintf("v%d-", r.offset)) {
							t.Errorf("offset %d holds %q", r.offset, r.value)
							return
						}
					}
					if len(recs) == 0 {
						// an emptied batch: skip past it
						h, _ := record.ParseHeader(res.Records)
						off = h.LastOffset + 1
						continue
					}
					off = recs[len(recs)-1].offset + 1
				}
			}
		}()
	}
	cleanerStop := make(chan struct{})
	cleanerDone := make(chan struct{})
	rounds := 0
	go func() {
		defer close(cleanerDone)
		for {
			select {
			case <-cleanerStop:
				return
			default:
			}
			res, err := l.clean(testNow, false)
			if err != nil {
				t.Error(err)
				return
			}
			if res.SegmentsCleaned > 0 {
				rounds++
			}
		}
	}()
	for i := 0; i < 10; i++ {
		appendKeyed(t, l, 50, 10)
		if _, err := l.EnforceRetention(testNow); err != nil {
			t.Fatal(err)
		}
	}
	close(cleanerStop)
	<-cleanerDone
	if rounds == 0 {
		// Retention may have won every race so far; clean once more, readers on.
		appendKeyed(t, l, 50, 10)
		if res := mustClean(t, l, testNow); res.SegmentsCleaned == 0 {
			t.Fatal("nothing cleaned")
		}
	}
	close(stop)
	wg.Wait()
}

func TestCloseStopsCleaning(t *testing.T) {
	for i := 0; i < 5; i++ {
		cfg := compactConfig()
		l, dir := openTestLog(t, cfg)
		appendKeyed(t, l, 300, 50)
		done := make(chan error)
		go func() { _, err := l.Clean(testNow); done <- err }()
		time.Sleep(time.Duration(i) * 200 * time.Microsecond)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("clean during close: %v", err)
		}
		if left := append(segmentFiles(t, dir, ".cleaned"), segmentFiles(t, dir, ".swap")...); len(left) > 0 {
			t.Fatalf("files left: %v", left)
		}
		l2, err := Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l2.HighWatermark() != 300 {
			t.Fatalf("hwm %d", l2.HighWatermark())
		}
		l2.Close()
	}
}
