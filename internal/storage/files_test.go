package storage

import (
	"context"
	"os"
	"testing"
	"time"
)

// withMaxOpenFiles lowers the process-wide segment file cap for one test.
func withMaxOpenFiles(t *testing.T, n int) {
	t.Helper()
	old := openFiles.setMax(int64(n))
	t.Cleanup(func() { openFiles.setMax(old) })
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

func TestOpenSegmentFilesStayUnderTheCap(t *testing.T) {
	const limit = 3
	withMaxOpenFiles(t, limit)
	before := countFDs(t)
	var logs []*Log
	for range 4 {
		l, _ := openTestLog(t, smallConfig())
		for i := range 60 {
			mustAppend(t, l, testBatch{n: 2, valueSize: 150, tag: "v", firstTs: testNow.UnixMilli() + int64(i)}.build(t))
		}
		logs = append(logs, l)
	}
	if n := len(logs[0].segs); n < 5 {
		t.Fatalf("want many segments, got %d", n)
	}
	for _, l := range logs {
		if got := readAll(t, l, 0, 300); len(got) != 120 {
			t.Fatalf("read %d records, want 120", len(got))
		}
		if off, _, ok, err := l.OffsetForTimestamp(testNow.UnixMilli() + 20); err != nil || !ok || off != 40 {
			t.Fatalf("OffsetForTimestamp: %d %v %v", off, ok, err)
		}
	}
	for _, l := range logs {
		l.sealing.Wait() // a background seal holds its segment's file while it runs
	}
	if n := openFiles.count(); n > limit {
		t.Fatalf("%d segment files open, cap %d", n, limit)
	}
	if n := countFDs(t) - before; n > limit {
		t.Fatalf("%d more file descriptors after reading %d logs, cap %d", n, len(logs), limit)
	}
}

func TestConcurrentReadersWhileFilesAreEvicted(t *testing.T) {
	withMaxOpenFiles(t, 2)
	testConcurrentReadersDuringAppendsAndRetention(t)
}

func TestCleanReopenReadsNoSegment(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentMs = 1000
	l, dir := openTestLog(t, cfg)
	for i := range 40 {
		mustAppend(t, l, testBatch{n: 2, valueSize: 100, tag: "c", firstTs: testNow.UnixMilli() + int64(i)}.build(t))
	}
	want := readAll(t, l, 0, 1<<20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	// Every segment, the active one included, came up from its index files:
	// the active one with its index loaded, the sealed ones with theirs left
	// for their first use.
	for i, s := range l2.segs {
		if wantLoaded := i == len(l2.segs)-1; s.f != nil || s.loaded != wantLoaded {
			t.Fatalf("segment %d: file opened %v, index loaded %v", s.base, s.f != nil, s.loaded)
		}
	}
	active := l2.segs[len(l2.segs)-1]
	if l2.HighWatermark() != 80 || active.lastOffset != 79 {
		t.Fatalf("hwm %d, active last offset %d after clean reopen", l2.HighWatermark(), active.lastOffset)
	}
	if active.maxTs != testNow.UnixMilli()+39 {
		t.Fatalf("active segment max timestamp %d", active.maxTs)
	}
	got := readAll(t, l2, 0, 1<<20)
	if len(got) != len(want) || got[len(got)-1].offset != want[len(want)-1].offset {
		t.Fatalf("read %d records after clean reopen, want %d", len(got), len(want))
	}
	// segment.ms still counts from the active segment's first batch, read when
	// first needed.
	firstTs := testNow.UnixMilli() + int64(active.base/2)
	if w := active.timeWaited(0, firstTs+500); w != 500 {
		t.Fatalf("time waited for roll %d ms, want 500", w)
	}
	if res := mustAppend(t, l2, testBatch{n: 1}.build(t)); res.BaseOffset != 80 {
		t.Fatalf("append after clean reopen at %d", res.BaseOffset)
	}
}

func TestManagerDefersCleanLogsAndRecoversCrashedOnes(t *testing.T) {
	dir := t.TempDir()
	m, _ := OpenManager([]string{dir}, quietLogger())
	cfg := smallConfig()
	for _, topic := range []string{"clean", "crashed"} {
		l, err := m.Log(topic, 0, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch{n: 3}.build(t))
	}
	crashed := m.Get("crashed", 0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(crashed.dir + "/" + cleanShutdownFile) // as if killed before Close
	m2, _ := OpenManager([]string{dir}, quietLogger())
	defer m2.Close()
	for topic, want := range map[string]bool{"clean": false, "crashed": true, "never-written": false} {
		if got := m2.NeedsRecovery(topic, 0); got != want {
			t.Errorf("NeedsRecovery(%s) = %v, want %v", topic, got, want)
		}
	}
}

func TestRetentionOpensDeferredLogs(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	m, _ := OpenManager([]string{dir}, quietLogger())
	l, _ := m.Log("old", 0, [16]byte{1}, cfg)
	for range 30 {
		if _, err := l.Append(testBatch{n: 1, valueSize: 300, firstTs: time.Now().UnixMilli() - 10000}.build(t), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()

	m2, _ := OpenManager([]string{dir}, quietLogger())
	defer m2.Close()
	cfg.RetentionMs = 1000
	opened := make(chan struct{})
	m2.Defer("old", 0, func() error {
		defer close(opened)
		_, err := m2.Log("old", 0, [16]byte{1}, cfg)
		return err
	})
	if m2.Get("old", 0) != nil {
		t.Fatal("deferred log opened before use")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m2.RunRetention(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("retention did not open the deferred log")
	}
	l2 := m2.Get("old", 0)
	deadline := time.Now().Add(5 * time.Second)
	for l2.LogStartOffset() != 30 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if l2.LogStartOffset() != 30 {
		t.Fatalf("retention did not reach the deferred log: start %d", l2.LogStartOffset())
	}
}
