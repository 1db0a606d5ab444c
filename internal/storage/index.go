package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"unsafe"
)

// Index entry sizes, as in Kafka: the offset index maps a relative offset (int32)
// to a .log file position (int32); the time index maps a timestamp (int64) to a
// relative offset (int32). Both are big-endian.
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

type offsetEntry struct {
	rel int32 // offset - segment base offset (a batch's last offset, as Kafka writes it)
	pos int32 // file position of that batch
}

type timeEntry struct {
	ts  int64 // largest timestamp seen in the segment up to rel
	rel int32
}

// The in-memory copies of the two index files of a segment. The files are caches
// of what the .log says: written whole when a segment is sealed (rolled, or its
// log closed) or its index rebuilt, and checked (and rebuilt from the .log if
// they do not make sense) whenever they are loaded. The active segment's entries
// are only in memory: after a crash its index is rebuilt by recovery's scan
// anyway, so writing each entry through as well would only cost a syscall.

// indexWeight is what a loaded index counts for against the budget (indexes,
// files.go): the heap its slices hold, by capacity and with entries as laid
// out in memory (a timeEntry is padded to 16 bytes). Caller holds imu.
func (s *segment) indexWeight() int64 {
	return int64(cap(s.off))*int64(unsafe.Sizeof(offsetEntry{})) +
		int64(cap(s.tim))*int64(unsafe.Sizeof(timeEntry{}))
}

// cacheIndex puts a sealed segment's loaded index under the budget, which may
// unload it from then on (at once, if it does not fit). Call it only once the
// index files are known to hold the loaded entries: unloadIndex drops them for
// ensureIndex to read back. Sealed segments get no more entries, so the weight
// stays right.
func (s *segment) cacheIndex() {
	s.imu.RLock()
	w := s.indexWeight()
	s.imu.RUnlock()
	indexes.add(&s.index, w)
}

// cacheIndexLocked is cacheIndex for ensureIndex, which holds imu for the
// lookup to come: that keeps the budget from unloading the index to make room
// for itself, and the lookup's trim restores the bound afterwards.
func (s *segment) cacheIndexLocked() { indexes.add(&s.index, s.indexWeight()) }

// unloadIndex drops a sealed segment's loaded index unless a lookup is using
// it (the budget's evict). A lookup that finds it gone scans the segment from
// its start, and the next ensureIndex loads it again.
func unloadIndex(s *segment) bool {
	if !s.imu.TryLock() {
		return false
	}
	s.off, s.tim, s.loaded = nil, nil, false
	s.imu.Unlock()
	return true
}

func (s *segment) offsetIndexFull(maxBytes int32) bool {
	return int64(len(s.off)+1)*offsetEntrySize > int64(maxBytes) ||
		int64(len(s.tim)+1)*timeEntrySize > int64(maxBytes)
}

// lookupPos returns the position of the batch recorded for the largest indexed
// offset <= target, or 0: the start, also where an unloaded (empty) index
// sends the search.
func (s *segment) lookupPos(target int64) int64 {
	rel := target - s.base
	i := sort.Search(len(s.off), func(i int) bool { return int64(s.off[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(s.off[i-1].pos)
}

// lookupTime returns the offset to start scanning from for the first record with
// timestamp >= ts: the offset of the last entry whose timestamp is strictly below
// ts (every record up to it is older than ts), or the segment's base offset
// (also for an unloaded, empty, index).
func (s *segment) lookupTime(ts int64) int64 {
	i := sort.Search(len(s.tim), func(i int) bool { return s.tim[i].ts >= ts })
	if i == 0 {
		return s.base
	}
	return s.base + int64(s.tim[i-1].rel)
}

func (s *segment) appendOffsetEntry(rel int32, pos int32) {
	if n := len(s.off); n > 0 && s.off[n-1].rel >= rel {
		return
	}
	s.off = append(s.off, offsetEntry{rel, pos})
}

// appendTimeEntry adds an entry only when the timestamp grows, like Kafka's
// TimeIndex.maybeAppend, so entries are sorted by both fields.
//
// While no batch of the segment has had a timestamp (all -1, NO_TIMESTAMP),
// the largest timestamp's offset is still "before the segment" (rel -1);
// the entry then points at the segment's start instead, so that the entry a
// sealed segment must end with can be written and read back like any other
// (readIndexFiles refuses negative offsets, and the segment would be rebuilt
// from its .log at every load).
func (s *segment) appendTimeEntry(ts int64, rel int32) {
	rel = max(rel, 0)
	if n := len(s.tim); n > 0 && (s.tim[n-1].ts >= ts || s.tim[n-1].rel > rel) {
		return
	}
	s.tim = append(s.tim, timeEntry{ts, rel})
}

// readIndexFiles loads both index files and reports whether they are consistent
// with a .log of size bytes whose batches end before offset end: every entry
// must point inside the segment, as Kafka's index sanity check demands. An
// entry past the end would otherwise be kept, and Open, which checks the last
// entries against the same bound (peekSealedIndex), would scan the segment at
// every start.
func (s *segment) readIndexFiles(size, end int64) (off []offsetEntry, tim []timeEntry, ok bool) {
	span := end - s.base
	ob, err1 := os.ReadFile(s.path + ".index")
	tb, err2 := os.ReadFile(s.path + ".timeindex")
	if err1 != nil || err2 != nil || len(ob)%offsetEntrySize != 0 || len(tb)%timeEntrySize != 0 {
		return nil, nil, false
	}
	off = make([]offsetEntry, 0, len(ob)/offsetEntrySize)
	for i := 0; i < len(ob); i += offsetEntrySize {
		e := decodeOffsetEntry(ob[i:])
		if !e.fits(size, span) {
			return nil, nil, false
		}
		if n := len(off); n > 0 && (off[n-1].rel >= e.rel || off[n-1].pos >= e.pos) {
			return nil, nil, false
		}
		off = append(off, e)
	}
	tim = make([]timeEntry, 0, len(tb)/timeEntrySize)
	for i := 0; i < len(tb); i += timeEntrySize {
		e := decodeTimeEntry(tb[i:])
		if !e.fits(span) {
			return nil, nil, false
		}
		if n := len(tim); n > 0 && (tim[n-1].ts >= e.ts || tim[n-1].rel > e.rel) {
			return nil, nil, false
		}
		tim = append(tim, e)
	}
	if size > 0 && len(tim) == 0 {
		// A closed non-empty segment always ends with a time index entry (written at
		// roll); without it its largest timestamp is unknown.
		return nil, nil, false
	}
	return off, tim, true
}

func decodeOffsetEntry(b []byte) offsetEntry {
	return offsetEntry{int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))}
}

func decodeTimeEntry(b []byte) timeEntry {
	return timeEntry{int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))}
}

// fits reports whether an offset index entry can point into a segment whose
// .log is size bytes and whose offsets span span (from its base).
func (e offsetEntry) fits(size, span int64) bool {
	return e.rel >= 0 && int64(e.rel) < span && e.pos >= 0 && int64(e.pos) < size
}

// fits reports whether a time index entry can point into a segment whose
// offsets span span (from its base).
func (e timeEntry) fits(span int64) bool { return e.rel >= 0 && int64(e.rel) < span }

// readLastIndexEntry reads only the last entry of an index file whose entries
// are entrySize bytes (nil if the file is empty); ok is false if the file
// cannot be read or is not a whole number of entries long.
func readLastIndexEntry(path string, entrySize int) (last []byte, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size()%int64(entrySize) != 0 {
		return nil, false
	}
	if st.Size() == 0 {
		return nil, true
	}
	last = make([]byte, entrySize)
	if _, err := f.ReadAt(last, st.Size()-int64(entrySize)); err != nil {
		return nil, false
	}
	return last, true
}

// writeIndexFiles replaces both index files with the in-memory entries.
func (s *segment) writeIndexFiles() error { return s.encodeIndex().write(s.path, "", false) }

// indexFiles is the content of a segment's two index files.
type indexFiles struct{ off, tim []byte }

// encodeIndex serializes the in-memory entries (the caller keeps them from
// changing), so that writing them need not hold the segment's index lock.
func (s *segment) encodeIndex() indexFiles {
	ob := make([]byte, 0, len(s.off)*offsetEntrySize)
	for _, e := range s.off {
		ob = binary.BigEndian.AppendUint32(ob, uint32(e.rel))
		ob = binary.BigEndian.AppendUint32(ob, uint32(e.pos))
	}
	tb := make([]byte, 0, len(s.tim)*timeEntrySize)
	for _, e := range s.tim {
		tb = binary.BigEndian.AppendUint64(tb, uint64(e.ts))
		tb = binary.BigEndian.AppendUint32(tb, uint32(e.rel))
	}
	return indexFiles{ob, tb}
}

// write writes both files of the segment at path under names ending in
// suffix, synced if sync.
func (x indexFiles) write(path, suffix string, sync bool) error {
	if err := writeFile(path+".index"+suffix, x.off, sync); err != nil {
		return err
	}
	return writeFile(path+".timeindex"+suffix, x.tim, sync)
}

func writeFile(path string, b []byte, sync bool) error {
	if err := createFile(path, b, sync); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}
