package storage

import (
	"fmt"
	"os"
	"syscall"
)

// Segment .log files are opened when first read or written and closed again
// once more than half of RLIMIT_NOFILE are open, least recently used first
// (clockCache, a CLOCK approximation of LRU). Kafka keeps every segment's files
// open and asks operators for a RLIMIT_NOFILE in the hundreds of thousands;
// bounding them here lets a broker with tens of thousands of partitions start,
// and keep serving, under an ordinary limit. Index files are never held open:
// they are read or written whole.
//
// Sealed segments' indexes are kept in memory within a byte budget for the
// whole process (defaultIndexBudget, 128 MiB), unloaded least recently used
// first. Kafka mmaps its index files, so they live in the page cache, which
// can evict them; kept on the heap for good they would grow with the retained
// log, about 5 MiB per GiB of log at the default index.interval.bytes (5 GB
// for 1 TB). 128 MiB holds the indexes of some 25 GiB of log, more than the
// recently read segments of most brokers; an unloaded index costs its next
// user one read of its two files, some 5 MiB for a full 1 GiB segment, usually
// from the page cache. Open loads none of them: it reads only the last entry of
// each file of a sealed segment (peekSealedIndex), so that reopening a
// partition does not read all its index files to keep a few, and a sealed
// segment starts out unloaded, as if the budget had unloaded it. The active
// segment's index, only in memory until sealing writes its files, is never
// unloaded, nor is a rolled segment's before its files are written.
//
// Both bounds are soft: a file or an index in use (a read or append holds the
// segment's fmu read lock, an index lookup its imu read lock) is not let go
// under its user, so the bound can be exceeded by what concurrent users hold,
// until they are done.

// openFiles is the process-wide cache: RLIMIT_NOFILE is per process, so every
// log (and every Manager, should a process run several brokers) shares it.
var openFiles = newClockCache(defaultMaxOpenFiles(), closeFile)

// indexes is the process-wide budget for sealed segments' loaded indexes,
// weighed in bytes of heap (indexWeight).
var indexes = newClockCache(defaultIndexBudget, unloadIndex)

const defaultIndexBudget = 128 << 20

// minOpenFiles keeps the cache useful under a tiny RLIMIT_NOFILE: below a few
// dozen, concurrent readers of different segments would close each other's
// files between opening and reading them.
const minOpenFiles = 32

// defaultMaxOpenFiles gives half of the process's file descriptor limit to
// segment files and leaves the other half to connections, the metadata store
// and the rest; at most 65536 (the limit may be "unlimited").
func defaultMaxOpenFiles() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return int64(max(minOpenFiles, min(lim.Cur/2, 1<<16)))
}

// SetMaxOpenFiles bounds the segment files held open at once
// (kbroker.log.max.open.files); n <= 0 restores the default from
// RLIMIT_NOFILE. The bound is the process's, shared by every Manager. Files
// above it are closed at once unless in use.
func SetMaxOpenFiles(n int64) {
	if n <= 0 {
		n = defaultMaxOpenFiles()
	}
	openFiles.setMax(max(n, minOpenFiles))
}

// SetIndexCacheBytes bounds the heap sealed segments' loaded indexes may
// hold (kbroker.log.index.cache.bytes), for the whole process; indexes above
// it are unloaded at once unless in use.
func SetIndexCacheBytes(n int64) { indexes.setMax(max(n, 0)) }

// OpenFiles is how many segment files are open now, and the bound.
func OpenFiles() (open int, bound int64) { return openFiles.count(), openFiles.bound() }

// IndexCacheBytes is the heap sealed segments' loaded indexes hold now, and
// the bound.
func IndexCacheBytes() (used, bound int64) { return indexes.weight(), indexes.bound() }

// closeFile closes s's .log unless it is in use (openFiles' evict).
func closeFile(s *segment) bool {
	if !s.fmu.TryLock() {
		return false // being read, written or closed
	}
	f := s.f
	s.f = nil
	s.fmu.Unlock()
	// Nothing was written through f that is not in the page cache already; an
	// error closing a file opened O_RDWR without pending writes is not
	// actionable.
	_ = f.Close()
	return true
}

// acquire returns the segment's open .log with s.fmu read-locked, opening it
// if the cache had closed it. The caller calls release when done. It
// returns errSegmentGone once the segment is closed (deleted by retention,
// replaced by the cleaner, or its log closed).
func (s *segment) acquire() (*os.File, error) {
	s.fmu.RLock()
	for s.f == nil && !s.closed {
		s.fmu.RUnlock()
		if err := s.reopen(); err != nil {
			return nil, err
		}
		s.fmu.RLock()
	}
	if s.closed {
		s.fmu.RUnlock()
		return nil, errSegmentGone
	}
	s.file.touch()
	return s.f, nil
}

// release ends a use of the file acquire returned.
func (s *segment) release() {
	s.fmu.RUnlock()
	openFiles.trim()
}

// reopen opens the .log the cache closed.
func (s *segment) reopen() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.f != nil || s.closed {
		return nil
	}
	f, err := os.OpenFile(s.path+".log", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.f = f
	openFiles.add(&s.file, 1)
	return nil
}
