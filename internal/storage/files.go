package storage

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// Segment .log files are opened when first read or written and closed again
// once more than maxOpen of them are open, least recently used first (a CLOCK
// approximation). Kafka keeps every segment's files open and asks operators for
// a RLIMIT_NOFILE in the hundreds of thousands; bounding them here lets a broker
// with tens of thousands of partitions start, and keep serving, under an
// ordinary limit. Index files are never held open: closed segments' indexes are
// read into memory once, and the active segment's are written whole when it is
// sealed or closed.
//
// The bound is soft: a file in use (a read or append in progress holds its
// segment's fmu read lock) is never closed under the reader, so the count can
// exceed maxOpen by the number of concurrent users, until they release.

// openFiles is the process-wide cache: RLIMIT_NOFILE is per process, so every
// log (and every Manager, should a process run several brokers) shares it.
var openFiles = newFileCache(defaultMaxOpenFiles())

// minOpenFiles keeps the cache useful under a tiny RLIMIT_NOFILE: below a few
// dozen, concurrent readers of different segments would close each other's
// files between opening and reading them.
const minOpenFiles = 32

// defaultMaxOpenFiles gives half of the process's file descriptor limit to
// segment files and leaves the other half to connections, the metadata store
// and the rest; at most 65536 (the limit may be "unlimited").
func defaultMaxOpenFiles() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return int(max(minOpenFiles, min(lim.Cur/2, 1<<16)))
}

type fileCache struct {
	mu   sync.Mutex
	max  int
	open []*segment // segments whose f is open; a segment's slot is its index here
	hand int        // the CLOCK hand: where the next eviction looks first
	// over is set while more than max files are open because the ones that
	// could have been closed were in use; release then tries again.
	over atomic.Bool
}

func newFileCache(max int) *fileCache { return &fileCache{max: max} }

// setMax changes the bound (tests), closing files above it that are not in
// use, and returns the previous one.
func (c *fileCache) setMax(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.max
	c.max = max(n, 1)
	c.evictLocked()
	return old
}

// count is how many segment files are open.
func (c *fileCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// add records that s.f was just opened and closes others if that makes too
// many. The caller may hold s.fmu: eviction only try-locks segments, so it
// never waits for one while holding c.mu.
func (c *fileCache) add(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.used.Store(true) // it was opened to be used: spare it for one sweep
	s.slot = len(c.open)
	c.open = append(c.open, s)
	c.evictLocked()
}

// remove forgets s, whose file its caller (holding s.fmu) is closing.
func (c *fileCache) remove(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.slot >= 0 {
		c.removeAtLocked(s.slot)
	}
}

func (c *fileCache) removeAtLocked(i int) {
	gone, last := c.open[i], len(c.open)-1
	c.open[i] = c.open[last]
	c.open[i].slot = i
	c.open[last] = nil
	c.open = c.open[:last]
	gone.slot = -1
}

// evictLocked closes unused files until at most max are open, giving each
// recently used one a second chance (its used bit is cleared on the first
// pass). It gives up after two full sweeps: everything left is in use.
func (c *fileCache) evictLocked() {
	for steps := 2 * len(c.open); len(c.open) > c.max && steps > 0; steps-- {
		if c.hand >= len(c.open) {
			c.hand = 0
		}
		s := c.open[c.hand]
		if s.used.Load() {
			s.used.Store(false)
			c.hand++
			continue
		}
		if !s.fmu.TryLock() {
			c.hand++ // being read, written or closed
			continue
		}
		f := s.f
		s.f = nil
		c.removeAtLocked(c.hand) // the hand now points at the segment moved into the slot
		s.fmu.Unlock()
		// Nothing was written through f that is not in the page cache already;
		// an error closing a file opened O_RDWR without pending writes is not
		// actionable.
		_ = f.Close()
	}
	c.over.Store(len(c.open) > c.max)
}

// trim closes files over the bound that are no longer in use.
func (c *fileCache) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked()
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
	if !s.used.Load() {
		s.used.Store(true)
	}
	return s.f, nil
}

// release ends a use of the file acquire returned.
func (s *segment) release() {
	s.fmu.RUnlock()
	if openFiles.over.Load() {
		openFiles.trim()
	}
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
	openFiles.add(s)
	return nil
}
