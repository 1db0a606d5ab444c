package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Creating a log without fsyncs on the produce path. A partition is
// created on its first write, and its small files (partition.metadata,
// then leader-epoch-checkpoint at the first batch) each cost a synced
// temporary file and a synced directory: four fsyncs, ~12 ms, so writing
// 10,000 new partitions once took two minutes (issue 18).
//
// Kafka keeps these fsyncs off its request path too: partition.metadata is
// flushed by the scheduler (KAFKA-13092), and the snapshot fsyncs it
// needs only before its recovery point moves (KAFKA-15046). kbroker does
// the same with one rule: until a log created by this process fsyncs its
// records for the first time (a flush, the seal of a rolled segment, or
// Close), its small files are replaced atomically (temporary file and
// rename, which a kill -9 cannot tear) but not synced; that first data
// fsync syncs them first, with the log's directory and the directory
// holding it. So no record is ever on disk for certain while the files
// that describe it may not be, and what a kill -9 leaves (the page cache
// survives it) is what it was before.

// creationSync is the pending sync of a log created by this process.
type creationSync struct {
	mu      sync.Mutex
	dir     string
	pending bool
}

func newCreationSync(dir string) *creationSync { return &creationSync{dir: dir, pending: true} }

// creationFiles are the files a new log writes before its first data
// fsync: those present are synced.
var creationFiles = []string{partitionMetadataFile, epochCheckpointFile}

// replace makes data the content of path, without fsyncs while the
// creation's sync is pending, with replaceFile's otherwise. A nil c (a
// log opened from an existing directory) always syncs.
func (c *creationSync) replace(path string, data []byte) error {
	if c == nil {
		return replaceFile(path, data)
	}
	c.mu.Lock()
	defer c.mu.Unlock() // held, so that sync cannot run between the write and the rename
	if !c.pending {
		return replaceFile(path, data)
	}
	tmp := path + ".tmp"
	if err := createFile(tmp, data, false); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// sync makes the log's small files and its directory durable, once: the
// caller is about to fsync records.
func (c *creationSync) sync() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending {
		return nil
	}
	for _, name := range creationFiles {
		if err := syncFile(filepath.Join(c.dir, name)); err != nil {
			return fmt.Errorf("%w: syncing %s of a new log: %v", ErrStorage, name, err)
		}
	}
	// The log's directory holds the renames; its parent holds the log's
	// directory itself, which nothing synced before.
	for _, dir := range []string{c.dir, filepath.Dir(c.dir)} {
		if err := syncDirErr(dir); err != nil {
			return fmt.Errorf("%w: syncing directory %s of a new log: %v", ErrStorage, dir, err)
		}
	}
	c.pending = false
	return nil
}

// isPending reports whether the creation's files are still unsynced.
func (c *creationSync) isPending() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// syncFile fsyncs path if it exists.
func syncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
