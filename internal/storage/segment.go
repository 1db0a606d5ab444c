package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// segment is one <base>.log file with its .index and .timeindex.
//
// Locking: the owning Log's appendMu serializes every writer (append, roll,
// retention, close). Readers never take it: they read committed bytes (size) with
// ReadAt under fmu.RLock, and the index under imu.RLock.
type segment struct {
	base int64
	path string // dir/<20-digit base offset>, without extension
	f    *os.File

	// size is the number of bytes of whole, committed batches. Readers never read
	// past it, so they never see a batch being written.
	size atomic.Int64

	fmu    sync.RWMutex // Lock to close the file; readers hold RLock while reading
	closed bool

	imu        sync.RWMutex
	loaded     bool // off/tim hold the index (closed segments load it lazily)
	off        []offsetEntry
	tim        []timeEntry
	offF, timF *os.File // open while the segment is active
	maxTs      int64    // largest batch max timestamp in the segment (-1: none)
	maxTsOff   int64    // last offset of the batch holding maxTs
	lastOffset int64    // last offset written (base-1 if empty)

	// Appender-only state (guarded by the Log's appendMu).
	bytesSinceIndex int64
	rollBaseTs      int64 // max timestamp of the first batch: what segment.ms measures from
	created         time.Time
	// interval is index.interval.bytes when the segment was opened, used if its
	// index has to be rebuilt lazily.
	interval int32
}

func segmentPath(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d", base))
}

func newSegmentState(dir string, base int64) *segment {
	return &segment{
		base:       base,
		path:       segmentPath(dir, base),
		maxTs:      -1,
		maxTsOff:   base - 1,
		lastOffset: base - 1,
		rollBaseTs: -1,
		created:    time.Now(),
	}
}

// createSegment makes a new, empty active segment. Leftover files of the same name
// (a crash right after a roll) are truncated.
func createSegment(dir string, base int64) (*segment, error) {
	s := newSegmentState(dir, base)
	var err error
	if s.f, err = os.OpenFile(s.path+".log", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := s.openIndexFilesForAppend(true); err != nil {
		s.f.Close()
		return nil, err
	}
	s.loaded = true
	return s, nil
}

// openSegmentFile opens an existing .log; indexes are loaded separately.
func openSegmentFile(dir string, base int64) (*segment, error) {
	s := newSegmentState(dir, base)
	var err error
	if s.f, err = os.OpenFile(s.path+".log", os.O_RDWR, 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	st, err := s.f.Stat()
	if err != nil {
		s.f.Close()
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.size.Store(st.Size())
	s.created = st.ModTime()
	return s, nil
}

func (s *segment) openIndexFilesForAppend(truncate bool) error {
	flags := os.O_RDWR | os.O_CREATE
	if truncate {
		flags |= os.O_TRUNC
	}
	var err error
	if s.offF, err = os.OpenFile(s.path+".index", flags, 0o644); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if s.timF, err = os.OpenFile(s.path+".timeindex", flags, 0o644); err != nil {
		s.offF.Close()
		s.offF = nil
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}

// readAt reads committed bytes. It returns errSegmentGone if the segment was
// deleted (by retention) or closed meanwhile.
func (s *segment) readAt(p []byte, pos int64) error {
	s.fmu.RLock()
	defer s.fmu.RUnlock()
	if s.closed {
		return errSegmentGone
	}
	if _, err := s.f.ReadAt(p, pos); err != nil && !(errors.Is(err, io.EOF) && len(p) == 0) {
		return fmt.Errorf("%w: reading %s.log at %d: %v", ErrStorage, s.path, pos, err)
	}
	return nil
}

var errSegmentGone = errors.New("segment deleted")

// readHeader reads and parses the batch header at pos (pos < limit).
func (s *segment) readHeader(pos, limit int64) (batchHeader, error) {
	if limit-pos < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: partial batch header at %s.log:%d", ErrCorruptMessage, s.path, pos)
	}
	var b [batchHeaderSize]byte
	if err := s.readAt(b[:], pos); err != nil {
		return batchHeader{}, err
	}
	h, ok := parseHeader(b[:])
	if !ok || pos+h.size > limit {
		return batchHeader{}, fmt.Errorf("%w: bad batch header at %s.log:%d", ErrCorruptMessage, s.path, pos)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch (before limit) whose
// last offset is >= target, using the offset index to skip ahead. ok=false if none.
func (s *segment) findBatch(target, limit int64) (pos int64, h batchHeader, ok bool, err error) {
	if err := s.ensureIndex(); err != nil {
		return 0, h, false, err
	}
	s.imu.RLock()
	pos = s.lookupPos(target)
	s.imu.RUnlock()
	first := true
	for pos < limit {
		if h, err = s.readHeader(pos, limit); err != nil {
			return 0, h, false, err
		}
		if first && pos > 0 && h.baseOffset > target {
			// The index pointed past the target: it is stale. Scan from the start.
			pos, first = 0, false
			continue
		}
		first = false
		if h.lastOffset >= target {
			return pos, h, true, nil
		}
		pos += h.size
	}
	return pos, h, false, nil
}

// ensureIndex loads a closed segment's index files on first use, rebuilding them
// from the .log when they are missing or inconsistent.
func (s *segment) ensureIndex() error {
	s.imu.RLock()
	loaded := s.loaded
	s.imu.RUnlock()
	if loaded {
		return nil
	}
	s.imu.Lock()
	defer s.imu.Unlock()
	if s.loaded {
		return nil
	}
	size := s.size.Load()
	// The last time index entry must be the segment's largest timestamp (known from
	// the scan at Open); if the entry written at roll is missing, rebuild.
	if off, tim, ok := s.readIndexFiles(size); ok && (size == 0 || tim[len(tim)-1].ts == s.maxTs) {
		s.off, s.tim = off, tim
		s.loaded = true
		return nil
	}
	return s.rebuildIndexLocked(s.interval)
}

// rebuildIndexLocked rescans the .log's batch headers and rewrites both indexes.
// Caller holds imu.Lock.
func (s *segment) rebuildIndexLocked(interval int32) error {
	s.off, s.tim = s.off[:0], s.tim[:0]
	s.maxTs, s.maxTsOff = -1, s.base-1
	var since int64
	size := s.size.Load()
	var lastOff int64 = s.base - 1
	for pos := int64(0); pos < size; {
		h, err := s.readHeader(pos, size)
		if err != nil {
			return err
		}
		s.indexBatch(&h, pos, &since, interval)
		lastOff = h.lastOffset
		pos += h.size
	}
	s.lastOffset = lastOff
	if size > 0 {
		s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
	}
	s.loaded = true
	if s.offF == nil {
		return s.writeIndexFiles()
	}
	return nil
}

// indexBatch applies Kafka's LogSegment.append indexing rule to a batch at pos:
// track the max timestamp, and once more than index.interval.bytes were written
// since the last entry, index this batch (its last offset -> its position) in the
// offset index and the current max timestamp in the time index.
func (s *segment) indexBatch(h *batchHeader, pos int64, since *int64, interval int32) error {
	if h.maxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOff = h.maxTimestamp, h.lastOffset
	}
	if *since > int64(interval) {
		if err := s.appendOffsetEntry(int32(h.lastOffset-s.base), int32(pos)); err != nil {
			return err
		}
		if err := s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base)); err != nil {
			return err
		}
		*since = 0
	}
	*since += h.size
	return nil
}

// largestTimestamp is what retention.ms compares against (Kafka: the max record
// timestamp, or the file's modification time if no record has a timestamp).
func (s *segment) largestTimestamp() int64 {
	s.imu.RLock()
	defer s.imu.RUnlock()
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := s.f.Stat(); err == nil {
		return st.ModTime().UnixMilli()
	}
	return s.created.UnixMilli()
}

// seal turns the active segment into a closed one: the final time index entry is
// written (so the last entry is the segment's max timestamp, as Kafka guarantees on
// roll) and files are synced; Kafka's page-cache durability model syncs on roll
// rather than per append.
func (s *segment) seal() error {
	s.imu.Lock()
	var err error
	if s.size.Load() > 0 {
		err = s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
	}
	offF, timF := s.offF, s.timF
	s.offF, s.timF = nil, nil
	s.imu.Unlock()
	for _, f := range []*os.File{offF, timF} {
		if f == nil {
			continue
		}
		if e := f.Sync(); e != nil && err == nil {
			err = e
		}
		if e := f.Close(); e != nil && err == nil {
			err = e
		}
	}
	if e := s.f.Sync(); e != nil && err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("%w: sealing segment %s: %v", ErrStorage, s.path, err)
	}
	return nil
}

// close releases the files, waiting for in-flight reads.
func (s *segment) close() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	s.imu.Lock()
	for _, f := range []*os.File{s.offF, s.timF} {
		if f != nil {
			if e := f.Close(); e != nil && err == nil {
				err = e
			}
		}
	}
	s.offF, s.timF = nil, nil
	s.imu.Unlock()
	if e := s.f.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// remove closes the segment and deletes its files. Kafka first renames them to
// .deleted and removes them later; here in-flight reads are waited for instead
// (fmu), so the files can go at once.
func (s *segment) remove() error {
	cerr := s.close()
	var err error
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		if e := os.Remove(s.path + ext); e != nil && !os.IsNotExist(e) && err == nil {
			err = e
		}
	}
	if err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: deleting segment %s: %v", ErrStorage, s.path, err)
	}
	return nil
}

// loadSealedIndex takes a sealed segment's index files as they are, without
// reading its batches: the last time index entry (written when the segment was
// sealed) gives its largest timestamp. It reports false if the files are missing
// or do not make sense, and the segment must be scanned.
func (s *segment) loadSealedIndex() bool {
	s.imu.Lock()
	defer s.imu.Unlock()
	off, tim, ok := s.readIndexFiles(s.size.Load())
	if !ok {
		return false
	}
	s.off, s.tim, s.loaded = off, tim, true
	if n := len(tim); n > 0 {
		s.maxTs, s.maxTsOff = tim[n-1].ts, s.base+int64(tim[n-1].rel)
	}
	return true
}
