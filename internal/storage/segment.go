package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"kbroker/internal/record"
)

// segment is one <base>.log file with its .index and .timeindex.
//
// Locking: the owning Log's appendMu serializes every writer (append, roll,
// retention, close). Readers never take it: they read committed bytes (size) with
// ReadAt on the file acquire returns (holding fmu.RLock), and the index under
// imu.RLock.
type segment struct {
	base int64
	path string // dir/<20-digit base offset>, without extension

	// size is the number of bytes of whole, committed batches. Readers never read
	// past it, so they never see a batch being written.
	size atomic.Int64

	// fmu is held (RLock) by whoever uses f, and locked to open or close it: by
	// close, and by the file cache (files.go), which closes f when too many
	// segment files are open and acquire reopens it.
	fmu    sync.RWMutex
	f      *os.File // the .log; nil while not open
	closed bool
	file   cacheEntry // its place in openFiles while f is open

	// imu guards the index. The budget for sealed segments' indexes (indexes,
	// files.go) may unload it (loaded false, off and tim nil) when the index
	// files hold it: once the segment is sealed, never while it is active.
	imu        sync.RWMutex
	index      cacheEntry // its place in indexes while loaded and sealed
	loaded     bool       // off/tim hold the index (sealed segments load it when first used)
	off        []offsetEntry
	tim        []timeEntry
	maxTs      int64 // largest batch max timestamp in the segment (-1: none)
	maxTsOff   int64 // last offset of the batch holding maxTs
	lastOffset int64 // last offset written (base-1 if empty)

	// Appender-only state (guarded by the Log's appendMu).
	bytesSinceIndex int64
	// rollBaseTs is the max timestamp of the first batch, what segment.ms measures
	// from (-1: none; rollBaseUnknown: not read yet, as after a clean reopen).
	rollBaseTs int64
	created    time.Time
	// interval is index.interval.bytes when the segment was opened, used if its
	// index has to be rebuilt lazily.
	interval int32

	// tmu guards the aborted transactions of its .txnindex (txnindex.go),
	// read on first use.
	tmu       sync.RWMutex
	txnLoaded bool
	txnList   []AbortedTxn

	// lastFound is the batch findBatch found last (nil: none yet). A
	// consumer of many partitions whose answer's budget is spent reads the
	// same offset of most of them at every fetch, and a consumer that keeps
	// up reads the batch after the one it read last: starting from here
	// spares the header preads of the scan from the index entry, one per
	// batch in up to index.interval.bytes. The bytes below size never change
	// but by truncation, which clears it.
	lastFound atomic.Pointer[foundBatch]
}

// foundBatch is a batch's header and where it starts in the segment.
type foundBatch struct {
	pos int64
	h   record.BatchHeader
}

func segmentPath(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d", base))
}

func newSegmentState(dir string, base int64) *segment {
	s := &segment{
		base:       base,
		path:       segmentPath(dir, base),
		maxTs:      -1,
		maxTsOff:   base - 1,
		lastOffset: base - 1,
		rollBaseTs: -1,
		created:    time.Now(),
	}
	s.file.init(s)
	s.index.init(s)
	return s
}

// rollBaseUnknown marks a rollBaseTs to be read from the segment's first batch
// when first needed, as Kafka's LogSegment loads its rollingBasedTimestamp.
const rollBaseUnknown = math.MinInt64

// createSegment makes a new, empty active segment, indexed every interval
// bytes. A leftover .log of the same name (a crash right after a roll) is
// truncated.
func createSegment(dir string, base int64, interval int32) (*segment, error) {
	s := newSegmentState(dir, base)
	s.interval = interval
	var err error
	if s.f, err = os.OpenFile(s.path+".log", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	// Its index lives in memory until seal writes the files; a transaction
	// index left by a crash right after a roll is stale.
	s.loaded = true
	os.Remove(s.path + txnIndexSuffix)
	s.txnLoaded = true
	openFiles.add(&s.file, 1)
	return s, nil
}

// statSegment describes an existing .log without opening it: the file cache
// opens it on first read. Indexes are loaded separately.
func statSegment(dir string, base int64) (*segment, error) {
	s := newSegmentState(dir, base)
	st, err := os.Stat(s.path + ".log")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.size.Store(st.Size())
	s.created = st.ModTime()
	return s, nil
}

// readAt reads committed bytes. It returns errSegmentGone if the segment was
// deleted (by retention) or closed meanwhile.
func (s *segment) readAt(p []byte, pos int64) error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	if _, err := f.ReadAt(p, pos); err != nil && !(errors.Is(err, io.EOF) && len(p) == 0) {
		return fmt.Errorf("%w: reading %s.log at %d: %v", ErrStorage, s.path, pos, err)
	}
	return nil
}

// writeAt writes an appended batch (the appender's only write to the .log).
func (s *segment) writeAt(p []byte, pos int64) error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	if _, err := f.WriteAt(p, pos); err != nil {
		return fmt.Errorf("%w: writing %s.log: %v", ErrStorage, s.path, err)
	}
	return nil
}

// truncate cuts the .log to size (recovery dropping a bad tail).
func (s *segment) truncate(size int64) error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("%w: truncating %s.log: %v", ErrStorage, s.path, err)
	}
	s.lastFound.Store(nil) // it may lie past the cut, where new batches will go
	return nil
}

var errSegmentGone = errors.New("segment deleted")

// readHeader reads and parses the batch header at pos (pos < limit).
func (s *segment) readHeader(pos, limit int64) (record.BatchHeader, error) {
	if limit-pos < record.BatchHeaderSize {
		return record.BatchHeader{}, fmt.Errorf("%w: partial batch header at %s.log:%d", record.ErrCorruptMessage, s.path, pos)
	}
	var b [record.BatchHeaderSize]byte
	if err := s.readAt(b[:], pos); err != nil {
		return record.BatchHeader{}, err
	}
	h, ok := record.ParseHeader(b[:])
	if !ok || pos+h.Size > limit {
		return record.BatchHeader{}, fmt.Errorf("%w: bad batch header at %s.log:%d", record.ErrCorruptMessage, s.path, pos)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch (before limit) whose
// last offset is >= target, using the offset index to skip ahead. ok=false if none.
func (s *segment) findBatch(target, limit int64) (pos int64, h record.BatchHeader, ok bool, err error) {
	if err := s.ensureIndex(); err != nil {
		return 0, h, false, err
	}
	s.imu.RLock()
	pos = s.lookupPos(target)
	s.imu.RUnlock()
	indexes.trim()
	first := true
	if last := s.lastFound.Load(); last != nil && last.pos >= pos && last.pos+last.h.Size <= limit {
		if last.h.BaseOffset <= target && target <= last.h.LastOffset {
			return last.pos, last.h, true, nil
		}
		if last.h.LastOffset < target {
			// A batch boundary after the index entry and before the target:
			// the scan may start there, and the index is not in question.
			pos, first = last.pos+last.h.Size, false
		}
	}
	for pos < limit {
		if h, err = s.readHeader(pos, limit); err != nil {
			return 0, h, false, err
		}
		if first && pos > 0 && h.BaseOffset > target {
			// The index pointed past the target: it is stale. Scan from the start.
			pos, first = 0, false
			continue
		}
		first = false
		if h.LastOffset >= target {
			s.lastFound.Store(&foundBatch{pos: pos, h: h})
			return pos, h, true, nil
		}
		pos += h.Size
	}
	return pos, h, false, nil
}

// ensureIndex loads a sealed segment's index files on first use (and after the
// budget unloaded them), rebuilding them from the .log when they are missing
// or inconsistent. Every lookup calls it first, which marks the index used.
// The index may still be unloaded before the caller's lookup: that only makes
// the lookup scan from the segment's start.
func (s *segment) ensureIndex() error {
	s.index.touch()
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
	// Open: the last entry peekSealedIndex read, or the scan); if the entry written
	// at roll is missing, rebuild.
	if off, tim, ok := s.readIndexFiles(size, s.lastOffset+1); ok && (size == 0 || tim[len(tim)-1].ts == s.maxTs) {
		s.off, s.tim = off, tim
		s.loaded = true
		s.cacheIndexLocked()
		return nil
	}
	if err := s.rebuildIndexLocked(s.interval); err != nil {
		return err
	}
	if s.size.Load() > 0 {
		// A closed segment's time index ends with its largest timestamp, as
		// sealing leaves it.
		s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
	}
	if err := s.writeIndexFiles(); err != nil {
		return err // kept in memory, and out of the budget: the files do not hold it
	}
	s.cacheIndexLocked()
	return nil
}

// repairIndexFiles rewrites the index files of a sealed segment that Open
// scanned because they failed its checks, as Kafka rebuilds an index that
// fails its sanity check on load. Without it a segment that is never read
// would be scanned again at every start. The rebuilt entries are then let go,
// as a segment taken from its index files starts with none loaded.
func (s *segment) repairIndexFiles() error {
	if err := s.ensureIndex(); err != nil {
		return err
	}
	unloadIndex(s) // Open's own segment: nothing else holds it yet
	indexes.remove(&s.index)
	return nil
}

// rebuildIndexLocked rescans the .log's batch headers and rebuilds both indexes
// in memory. Caller holds imu.Lock.
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
		lastOff = h.LastOffset
		pos += h.Size
	}
	s.lastOffset = lastOff
	s.loaded = true
	return nil
}

// indexBatch applies Kafka's LogSegment.append indexing rule to a batch at pos:
// track the max timestamp, and once more than index.interval.bytes were written
// since the last entry, index this batch (its last offset -> its position) in the
// offset index and the current max timestamp in the time index.
func (s *segment) indexBatch(h *record.BatchHeader, pos int64, since *int64, interval int32) {
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOff = h.MaxTimestamp, h.LastOffset
	}
	if *since > int64(interval) {
		s.appendOffsetEntry(int32(h.LastOffset-s.base), int32(pos))
		s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
		*since = 0
	}
	*since += h.Size
}

// largestTimestamp is what retention.ms compares against (Kafka: the max record
// timestamp, or the file's modification time if no record has a timestamp).
func (s *segment) largestTimestamp() int64 {
	s.imu.RLock()
	ts := s.maxTs
	s.imu.RUnlock()
	if ts >= 0 {
		return ts
	}
	return s.modTime().UnixMilli()
}

// modTime is the .log's modification time (its creation time if it cannot be
// read), from the file system so that an evicted file need not be reopened.
func (s *segment) modTime() time.Time {
	if st, err := os.Stat(s.path + ".log"); err == nil {
		return st.ModTime()
	}
	return s.created
}

// seal turns the active segment into a closed one, as Kafka does on roll and
// on close: the final time index entry is added (so the last entry is the
// segment's max timestamp), both index files are written whole from memory,
// and they and the .log are synced; Kafka's page-cache durability model syncs
// on roll rather than per append. It returns errSegmentGone if the segment was
// closed meanwhile (deleted, or replaced by the cleaner): holding the file for
// the whole seal keeps a concurrent delete from racing with the index writes.
// Once the files are written the index is under the budget, which may unload
// it.
func (s *segment) seal() error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	s.imu.Lock()
	if s.size.Load() > 0 {
		s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
	}
	index := s.encodeIndex()
	s.imu.Unlock()
	err = index.write(s.path, "", true)
	if err == nil {
		err = s.syncTxnIndex(true)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("%w: sealing segment %s: %v", ErrStorage, s.path, err)
	}
	s.cacheIndex()
	return nil
}

// close releases the file, waiting for in-flight reads, and takes the segment
// out of both caches for good.
func (s *segment) close() error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	indexes.forget(&s.index)
	if s.f == nil {
		return nil
	}
	openFiles.forget(&s.file)
	err := s.f.Close()
	s.f = nil
	return err
}

// remove closes the segment and deletes its files. Kafka first renames them to
// .deleted and removes them later; here in-flight reads are waited for instead
// (fmu), so the files can go at once.
func (s *segment) remove() error {
	cerr := s.close()
	var err error
	for _, ext := range segmentExts {
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
// or do not make sense, and the segment must be scanned. Open uses it for the
// last segment after a clean shutdown, which becomes active again with its
// index in memory; earlier segments only need peekSealedIndex.
func (s *segment) loadSealedIndex(end int64) bool {
	s.imu.Lock()
	defer s.imu.Unlock()
	off, tim, ok := s.readIndexFiles(s.size.Load(), end)
	if !ok {
		return false
	}
	s.off, s.tim, s.loaded = off, tim, true
	if n := len(tim); n > 0 {
		s.maxTs, s.maxTsOff = tim[n-1].ts, s.base+int64(tim[n-1].rel)
	}
	return true
}

// peekSealedIndex is what Open reads of a sealed segment that is not the last
// (its offsets end before end): the last entry of each index file, leaving the
// index unloaded. Open needs only the segment's largest timestamp, the last
// time index entry, which it takes as loadSealedIndex does; reading both files
// whole for it (some 5 MiB per GiB of log), only for the budget to unload most
// of them again, made opening a partition read every index file it has. The
// first lookup loads the index through ensureIndex, as after the budget
// unloaded it, which checks the whole files and rebuilds them from the .log if
// they are inconsistent.
//
// The tails get sanity checks in the spirit of Kafka's when it loads a segment.
// It reports false, and the segment must be scanned, if a file is missing or
// not a whole number of entries, a non-empty segment has no time index entry
// (sealing always writes one), or a last entry points outside the segment's
// offsets or (the offset index's) past its .log.
func (s *segment) peekSealedIndex(end int64) bool {
	size, span := s.size.Load(), end-s.base
	tb, ok := readLastIndexEntry(s.path+".timeindex", timeEntrySize)
	if !ok || (size > 0 && tb == nil) {
		return false
	}
	ob, ok := readLastIndexEntry(s.path+".index", offsetEntrySize)
	if !ok {
		return false
	}
	if ob != nil {
		if !decodeOffsetEntry(ob).fits(size, span) {
			return false
		}
	}
	if tb == nil {
		return true // an empty segment: no timestamp
	}
	e := decodeTimeEntry(tb)
	if !e.fits(span) {
		return false
	}
	s.imu.Lock()
	s.maxTs, s.maxTsOff = e.ts, s.base+int64(e.rel)
	s.imu.Unlock()
	return true
}
