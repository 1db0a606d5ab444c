package storage

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestManagerCreateFindDelete(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m, err := OpenManager([]string{d1, d2}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	var logs []*Log
	for p := int32(0); p < 4; p++ {
		l, err := m.Log("orders", p, id, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch{n: int(p) + 1}.build(t))
		logs = append(logs, l)
	}
	// Placed on the dir with the fewest partitions: two each.
	for _, d := range []string{d1, d2} {
		m, _ := filepath.Glob(filepath.Join(d, "orders-*"))
		if len(m) != 2 {
			t.Fatalf("%s holds %d partitions", d, len(m))
		}
	}
	if m.Get("orders", 2) != logs[2] || m.Get("orders", 9) != nil {
		t.Fatal("Get")
	}
	if again, _ := m.Log("orders", 2, id, DefaultConfig()); again != logs[2] {
		t.Fatal("Log did not return the open log")
	}
	meta, err := os.ReadFile(filepath.Join(logs[1].Dir(), "partition.metadata"))
	if err != nil || string(meta) != "version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4PEA\n" {
		t.Fatalf("partition.metadata = %q, %v", meta, err)
	}
	other, _ := m.Log("orders-eu", 0, [16]byte{9}, DefaultConfig())
	mustAppend(t, other, testBatch{}.build(t))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen finds the partitions wherever they are.
	m, err = OpenManager([]string{d1, d2}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for p := int32(0); p < 4; p++ {
		l, err := m.Log("orders", p, id, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if l.HighWatermark() != int64(p)+1 || l.Dir() != logs[p].Dir() {
			t.Fatalf("partition %d reopened with hwm %d in %s", p, l.HighWatermark(), l.Dir())
		}
	}
	// Delete: renamed to <topic>-<p>.<uuid>-delete, then removed; other topics untouched.
	if err := m.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if m.Get("orders", 0) != nil {
		t.Fatal("deleted log still open")
	}
	m.deleting.Wait()
	for _, d := range []string{d1, d2} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "orders-") && !strings.HasPrefix(e.Name(), "orders-eu-") {
				t.Fatalf("left behind: %s", e.Name())
			}
		}
	}
	if l, _ := m.Log("orders-eu", 0, [16]byte{9}, DefaultConfig()); l.HighWatermark() != 1 {
		t.Fatal("other topic affected")
	}
	// Recreated topic with the same name starts empty.
	l, err := m.Log("orders", 0, id, DefaultConfig())
	if err != nil || l.HighWatermark() != 0 {
		t.Fatalf("recreated partition: hwm %d, %v", l.HighWatermark(), err)
	}
}

func TestManagerReplacesStaleTopicIncarnation(t *testing.T) {
	d := t.TempDir()
	m, _ := OpenManager([]string{d}, quietLogger())
	oldID, newID := [16]byte{1}, [16]byte{2}
	l, _ := m.Log("t", 0, oldID, DefaultConfig())
	mustAppend(t, l, testBatch{n: 5}.build(t))
	m.Close()

	// The topic was deleted and recreated while this broker was down.
	m, _ = OpenManager([]string{d}, quietLogger())
	defer m.Close()
	l, err := m.Log("t", 0, newID, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.HighWatermark() != 0 {
		t.Fatalf("stale data kept: hwm %d", l.HighWatermark())
	}
	if id, ok := readTopicID(l.Dir()); !ok || id != newID {
		t.Fatal("partition.metadata not replaced")
	}
	// The same while the old log is open.
	mustAppend(t, l, testBatch{}.build(t))
	l2, err := m.Log("t", 0, [16]byte{3}, DefaultConfig())
	if err != nil || l2.HighWatermark() != 0 {
		t.Fatalf("open stale log not replaced: %v", err)
	}
	if _, err := l.Append(testBatch{}.build(t), testNow); err == nil {
		t.Fatal("old log still writable")
	}
}

func TestManagerRunRetention(t *testing.T) {
	m, _ := OpenManager([]string{t.TempDir()}, quietLogger())
	defer m.Close()
	cfg := smallConfig()
	cfg.RetentionMs = 1000
	l, _ := m.Log("r", 0, [16]byte{1}, cfg)
	for i := 0; i < 30; i++ {
		if _, err := l.Append(testBatch{n: 1, valueSize: 300, firstTs: time.Now().UnixMilli() - 10000}.build(t), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.RunRetention(ctx, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for l.LogStartOffset() != 30 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if l.LogStartOffset() != 30 {
		t.Fatalf("retention did not run: start %d", l.LogStartOffset())
	}
}

// Partitions opened by many callers at once are each opened once (every
// caller gets the same log), spread evenly over the log dirs by the
// partition counts the Manager keeps, and a deleted partition's slot is
// the next one filled.
func TestManagerOpensPartitionsConcurrently(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m, err := OpenManager([]string{d1, d2}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const partitions, callers = 32, 8
	id := [16]byte{7}
	got := make([][partitions]*Log, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for p := range partitions {
				// Each caller starts at another partition, so that
				// several ask for the same one at the same time.
				p = (p + c*partitions/callers) % partitions
				l, err := m.Log("many", int32(p), id, DefaultConfig())
				if err != nil {
					t.Error(err)
					return
				}
				got[c][p] = l
			}
		})
	}
	wg.Wait()
	for p := range partitions {
		for c := 1; c < callers; c++ {
			if got[c][p] != got[0][p] {
				t.Fatalf("partition %d opened twice: callers got different logs", p)
			}
		}
	}
	count := func(d string) int {
		ds, _ := filepath.Glob(filepath.Join(d, "many-*"))
		return len(ds)
	}
	if count(d1) != partitions/2 || count(d2) != partitions/2 {
		t.Fatalf("placed %d and %d partitions, want %d in each dir", count(d1), count(d2), partitions/2)
	}
	// Delete one from the second dir: with the counts equal, a new
	// partition would go to the first.
	gone := -1
	for p := range partitions {
		if filepath.Dir(got[0][p].Dir()) == filepath.Clean(d2) {
			gone = p
			break
		}
	}
	if err := m.DeletePartition("many", int32(gone)); err != nil {
		t.Fatal(err)
	}
	l, err := m.Log("other", 0, [16]byte{8}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l.Dir()) != filepath.Clean(d2) {
		t.Fatalf("new partition placed in %s, want %s, which lost one", filepath.Dir(l.Dir()), d2)
	}
}
