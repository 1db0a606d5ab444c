package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// A log created by the Manager writes partition.metadata and its first
// leader-epoch-checkpoint without fsyncs, readable at once (what a kill -9
// leaves), and syncs them with its first fsync of records, here the flush
// flush.messages=2 asks for at the second batch.
func TestNewLogSyncsItsFilesAtItsFirstRecordFsync(t *testing.T) {
	m, err := OpenManager([]string{t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultConfig()
	cfg.FlushMessages = 2
	id := [16]byte{7, 7}
	l, err := m.Log("created", 0, id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !l.creation.isPending() {
		t.Fatal("a log the Manager created syncs its files before any record is written")
	}
	mustAppend(t, l, testBatch{n: 1, valueSize: 10}.build(t))
	if !l.creation.isPending() {
		t.Fatal("the first batch (no flush due) synced the new log's files")
	}
	if got, ok := readTopicID(l.dir); !ok || got != id {
		t.Fatalf("partition.metadata holds %x (ok=%v), want %x", got, ok, id)
	}
	if b, err := os.ReadFile(filepath.Join(l.dir, epochCheckpointFile)); err != nil || string(b) != "0\n1\n0 0\n" {
		t.Fatalf("leader-epoch-checkpoint %q, %v", b, err)
	}
	mustAppend(t, l, testBatch{n: 1, valueSize: 10}.build(t))
	if l.creation.isPending() {
		t.Fatal("the flush at flush.messages left the new log's files unsynced")
	}
}

// A log opened from a directory that was already there keeps every write
// of its small files synced: only creation is deferred.
func TestReopenedLogSyncsItsFilesAtOnce(t *testing.T) {
	dirs := []string{t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Log("again", 0, [16]byte{1}, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Log("again", 0, [16]byte{1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.creation.isPending() {
		t.Fatal("a reopened log defers the sync of its files")
	}
}

// A checkpoint a power failure left empty (a new log's first one is not
// synced) reads as none: epoch 0 from the log start, not no epochs at all.
func TestEmptyEpochCheckpointReadsAsNone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := loadEpochs(dir, 0, 5)
	if len(c.entries) != 1 || c.entries[0] != (EpochEntry{0, 0}) {
		t.Fatalf("epochs %v, want [{0 0}]", c.entries)
	}
}
