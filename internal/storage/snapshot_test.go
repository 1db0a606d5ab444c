package storage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// producerLog writes batches of several idempotent producers (one bumping its
// epoch) and plain producers over many segments.
func producerLog(t *testing.T, l *Log) {
	t.Helper()
	seqs := map[int64]int32{}
	epochs := map[int64]int16{1: 0, 2: 0, 3: 5, 4: 0}
	for i := 0; i < 120; i++ {
		pid := int64(1 + i%4)
		if i == 60 {
			epochs[2], seqs[2] = 1, 0 // producer 2 bumps its epoch
		}
		n := 1 + i%3
		if i%5 == 0 {
			mustAppend(t, l, testBatch{n: 2, valueSize: 80}.build(t))
		}
		mustAppend(t, l, testBatch{n: n, valueSize: 80, pid: pid, epoch: epochs[pid], seq: seqs[pid]}.build(t))
		seqs[pid] += int32(n)
	}
}

type openedState struct {
	hwm, maxOff, maxTs int64
	producers          map[int64]*producerEntry
	closedUnread       bool // no closed segment's .log was read (scanned) at Open
}

func openState(t *testing.T, dir string, cfg Config) openedState {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := openedState{hwm: l.HighWatermark(), producers: l.ps.producers, closedUnread: true}
	for _, s := range l.segs[:len(l.segs)-1] {
		st.closedUnread = st.closedUnread && s.f == nil
	}
	if st.maxOff, st.maxTs, err = l.MaxTimestamp(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0, 1<<20); int64(len(got)) != st.hwm {
		t.Fatalf("read %d records, want %d", len(got), st.hwm)
	}
	return st
}

func removeSnapshots(dir string) {
	for _, off := range listSnapshots(dir) {
		os.Remove(snapshotPath(dir, off))
	}
}

func TestSnapshotRestoreEqualsFullScan(t *testing.T) {
	for _, shutdown := range []string{"clean", "crash"} {
		t.Run(shutdown, func(t *testing.T) {
			cfg := smallConfig()
			l, dir := openTestLog(t, cfg)
			producerLog(t, l)
			if len(l.segs) < 5 {
				t.Fatalf("want many segments, got %d", len(l.segs))
			}
			hwm := l.HighWatermark()
			if shutdown == "clean" {
				l.Close()
				if _, err := os.Stat(snapshotPath(dir, hwm)); err != nil {
					t.Fatalf("no snapshot at the log end after Close: %v", err)
				}
			} else {
				crash(t, l)
				if len(listSnapshots(dir)) == 0 {
					t.Fatal("no snapshot written at rolls")
				}
			}
			scan := filepath.Join(t.TempDir(), "scan")
			copyDir(t, dir, scan)
			removeSnapshots(scan)

			fromSnap, fromScan := openState(t, dir, cfg), openState(t, scan, cfg)
			if !fromSnap.closedUnread {
				t.Fatal("closed segments were scanned although a snapshot covered them")
			}
			if fromScan.closedUnread {
				t.Fatal("the full scan did not scan")
			}
			fromSnap.closedUnread, fromScan.closedUnread = false, false
			if !reflect.DeepEqual(fromSnap, fromScan) {
				t.Fatalf("snapshot restore\n%+v\nfull scan\n%+v", fromSnap, fromScan)
			}
			if len(fromSnap.producers) != 4 || len(fromSnap.producers[1].batches) != batchesToRetain {
				t.Fatalf("producer state %+v", fromSnap.producers)
			}
		})
	}
}

func TestDuplicateDetectionSurvivesRestart(t *testing.T) {
	l, dir := openTestLog(t, smallConfig())
	var first AppendResult
	for i := 0; i < batchesToRetain; i++ {
		res := mustAppend(t, l, testBatch{n: 2, pid: 3, epoch: 1, seq: int32(2 * i)}.build(t))
		if i == 0 {
			first = res
		}
	}
	l.Close()
	l2, err := Open(dir, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	res, err := l2.Append(testBatch{n: 2, pid: 3, epoch: 1, seq: 0}.build(t), testNow)
	if err != nil || !res.Duplicate || res.BaseOffset != first.BaseOffset {
		t.Fatalf("retry of the oldest remembered batch after restart: %+v %v", res, err)
	}
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	producerLog(t, l)
	l.Close()
	want := openState(t, dir, cfg)
	snaps := listSnapshots(dir)
	newest := snapshotPath(dir, snaps[len(snaps)-1])
	b, _ := os.ReadFile(newest)
	b[len(b)-1] ^= 1
	os.WriteFile(newest, b, 0o644)
	got := openState(t, dir, cfg)
	got.closedUnread, want.closedUnread = false, false
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after a corrupt snapshot\n%+v\nwant\n%+v", got, want)
	}
	if _, err := os.Stat(newest); err == nil {
		// Open wrote a new one at Close; it must be readable.
		if _, _, ok := loadLatestSnapshot(dir); !ok {
			t.Fatal("snapshot still unreadable")
		}
	}
}

// A snapshot past the log end (the tail was lost in a crash) must not be used.
func TestSnapshotBeyondTruncatedTailIgnored(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	mustAppend(t, l, testBatch{n: 2, pid: 5, epoch: 0, seq: 0}.build(t))
	mustAppend(t, l, testBatch{n: 2, pid: 5, epoch: 0, seq: 2}.build(t))
	l.Close()
	// Lose the second batch, as if it had never reached the disk.
	seg := lastSegment(t, dir)
	fi, _ := os.Stat(seg)
	os.Truncate(seg, fi.Size()/2)
	os.Remove(filepath.Join(dir, cleanShutdownFile))
	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.HighWatermark() != 2 {
		t.Fatalf("hwm %d, want 2", l2.HighWatermark())
	}
	if _, err := l2.Append(testBatch{n: 1, pid: 5, epoch: 0, seq: 4}.build(t), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence after the lost batch accepted: %v", err)
	}
	mustAppend(t, l2, testBatch{n: 1, pid: 5, epoch: 0, seq: 2}.build(t))
}

func TestProducerIDExpiration(t *testing.T) {
	cfg := smallConfig()
	cfg.ProducerIDExpirationMs = time.Minute.Milliseconds()
	l, _ := openTestLog(t, cfg)
	old := testNow.Add(-2 * time.Minute).UnixMilli()
	mustAppend(t, l, testBatch{n: 1, pid: 1, epoch: 0, seq: 0, firstTs: old}.build(t))
	mustAppend(t, l, testBatch{n: 1, pid: 2, epoch: 0, seq: 0}.build(t))
	if _, err := l.EnforceRetention(testNow); err != nil {
		t.Fatal(err)
	}
	// Producer 1 was forgotten: any sequence is accepted. Producer 2 was not.
	mustAppend(t, l, testBatch{n: 1, pid: 1, epoch: 0, seq: 7}.build(t))
	if _, err := l.Append(testBatch{n: 1, pid: 2, epoch: 0, seq: 7}.build(t), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("recent producer lost its state: %v", err)
	}
	if _, ok := l.ps.producers[2]; !ok {
		t.Fatal("producer 2 expired early")
	}
}
