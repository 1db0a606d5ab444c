package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"kbroker/internal/record"
)

// File suffixes of a cleaned segment on its way in (Kafka's LogFileUtils):
// ".cleaned" while written, ".swap" once complete and synced.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// segmentExts are a segment's files; .txnindex exists only for a segment
// with aborted transactions (and for every cleaned one).
var segmentExts = []string{".log", ".index", ".timeindex", txnIndexSuffix}

// createCleanedSegment starts "<base>.log.cleaned". Its index is built in memory
// as batches are written and saved by finishCleaned. Its file joins the file
// cache only once swapIn gave it its final name.
func createCleanedSegment(dir string, base int64, interval int32) (*segment, error) {
	s := newSegmentState(dir, base)
	var err error
	if s.f, err = os.OpenFile(s.path+".log"+cleanedSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.loaded = true
	s.interval = interval
	s.txnLoaded = true // the cleaner sets its aborted transactions
	return s, nil
}

// finishCleaned writes the cleaned segment's index files (with the final time
// index entry a sealed segment has), syncs everything and sets the .log's
// modification time.
func (s *segment) finishCleaned(mtime time.Time) error {
	if s.size.Load() > 0 {
		s.appendTimeEntry(s.maxTs, int32(s.maxTsOff-s.base))
	}
	err := s.encodeIndex().write(s.path, cleanedSuffix, true)
	if err == nil {
		// Written even when empty, so that a swap always renames one and
		// recovery can tell which generation the final name holds.
		s.tmu.RLock()
		b := encodeTxnIndex(s.txnList)
		s.tmu.RUnlock()
		if e := writeFile(s.path+txnIndexSuffix+cleanedSuffix, b, true); e != nil {
			err = fmt.Errorf("%w: writing %s%s%s: %v", ErrStorage, s.path, txnIndexSuffix, cleanedSuffix, e)
		}
	}
	if err == nil {
		if e := s.f.Sync(); e != nil {
			err = fmt.Errorf("%w: syncing %s.log%s: %v", ErrStorage, s.path, cleanedSuffix, e)
		}
	}
	if err == nil && !mtime.IsZero() {
		if os.Chtimes(s.path+".log"+cleanedSuffix, mtime, mtime) == nil {
			s.created = mtime
		}
	}
	return err
}

// discardCleaned drops a cleaned segment that will not be swapped in.
func (s *segment) discardCleaned() {
	s.f.Close()
	for _, ext := range segmentExts {
		os.Remove(s.path + ext + cleanedSuffix)
		os.Remove(s.path + ext + swapSuffix)
	}
}

// renameSegmentFiles renames the four files of a cleaned segment from one
// suffix to another, the .txnindex first and the .log last: whether the .log
// carries the new suffix is what recovery goes by.
func renameSegmentFiles(path, from, to string) error {
	for _, ext := range []string{txnIndexSuffix, ".index", ".timeindex", ".log"} {
		if err := os.Rename(path+ext+from, path+ext+to); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	return nil
}

// swapIn replaces the source segments by the cleaned one (UnifiedLog.replaceSegments).
// It runs under the append lock, so no roll, retention or close interleaves, and
// gives up if the sources are no longer all in the log. Once the .log is renamed
// to .swap the swap is committed: a crash from then on is finished by Open.
func (l *Log) swapIn(out *segment, srcs []*segment) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	segs, closed := l.segs, l.closed
	l.mu.RUnlock()
	i := indexOf(segs, srcs[0])
	if closed || l.closing.Load() || i < 0 || i+len(srcs) >= len(segs) {
		out.discardCleaned()
		return errCleaningAborted
	}
	for j, s := range srcs {
		if segs[i+j] != s {
			out.discardCleaned()
			return errCleaningAborted
		}
	}
	if err := renameSegmentFiles(out.path, cleanedSuffix, swapSuffix); err != nil {
		out.discardCleaned()
		return err
	}
	syncDir(l.dir)
	next := make([]*segment, 0, len(segs)-len(srcs)+1)
	next = append(append(append(next, segs[:i]...), out), segs[i+len(srcs):]...)
	l.mu.Lock()
	l.segs = next
	l.tooBig.Store(nil) // compaction rewrote the batches
	l.mu.Unlock()
	// remove waits for reads in flight on the sources; later reads of them restart
	// on the new segment list. The first source's files have the final names the
	// swap files take next.
	var firstErr error
	for _, s := range srcs {
		if err := s.remove(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := renameSegmentFiles(out.path, swapSuffix, ""); err != nil {
		// out keeps its file open outside the cache, which would reopen it by
		// a name it does not have.
		if firstErr == nil {
			firstErr = err
		}
	} else {
		openFiles.add(&out.file, 1)
		// Its index files now have their final names: the budget may unload
		// the loaded index, to be read back from them.
		out.cacheIndex()
	}
	syncDir(l.dir)
	return firstErr
}

// recoverCleanerFiles finishes or rolls back a swap cut short by a crash, as
// Kafka's LogLoader does before loading segments: ".cleaned" files are deleted
// (the sources are intact); a ".log.swap" was complete, so every segment whose
// base offset falls in its offset range (its sources) is deleted and it is
// renamed into place. Its index files are deleted rather than trusted, since the
// crash may have left either generation under the final names; they are rebuilt
// from the .log.
func recoverCleanerFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	var swaps []int64
	for name := range names {
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			os.Remove(filepath.Join(dir, name))
		case strings.HasSuffix(name, ".log"+swapSuffix):
			stem := strings.TrimSuffix(name, ".log"+swapSuffix)
			if b, err := strconv.ParseInt(stem, 10, 64); err == nil && len(stem) == 20 {
				swaps = append(swaps, b)
			}
		case strings.HasSuffix(name, swapSuffix):
			// An index renamed before its .log was: the swap did not commit.
			stem := strings.TrimSuffix(name, swapSuffix)
			for _, ext := range []string{".index", ".timeindex", txnIndexSuffix} {
				stem = strings.TrimSuffix(stem, ext)
			}
			if !names[stem+".log"+swapSuffix] {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
	for _, base := range swaps {
		path := segmentPath(dir, base)
		next, err := nextOffsetOfFile(path + ".log" + swapSuffix)
		if err != nil {
			return err
		}
		for name := range names {
			stem, ok := strings.CutSuffix(name, ".log")
			if !ok || len(stem) != 20 {
				continue
			}
			if b, err := strconv.ParseInt(stem, 10, 64); err == nil && b > base && b < next {
				for _, ext := range segmentExts {
					os.Remove(filepath.Join(dir, stem+ext))
				}
			}
		}
		for _, ext := range []string{".index", ".timeindex"} {
			os.Remove(path + ext)
			os.Remove(path + ext + swapSuffix)
		}
		// The cleaned transaction index cannot be rebuilt from the .log
		// alone: take it from .swap, or, once renamed (the first of the
		// files to be), it already has the final name.
		if _, err := os.Stat(path + txnIndexSuffix + swapSuffix); err == nil {
			if err := os.Rename(path+txnIndexSuffix+swapSuffix, path+txnIndexSuffix); err != nil {
				return fmt.Errorf("%w: finishing interrupted segment swap: %v", ErrStorage, err)
			}
		}
		if err := os.Rename(path+".log"+swapSuffix, path+".log"); err != nil {
			return fmt.Errorf("%w: finishing interrupted segment swap: %v", ErrStorage, err)
		}
	}
	if len(swaps) > 0 {
		syncDir(dir)
	}
	return nil
}

// nextOffsetOfFile is the offset after the last batch of a segment file (its base
// offset from the name if it holds none).
func nextOffsetOfFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	base, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), ".log"+swapSuffix), 10, 64)
	next := base
	var hb [record.BatchHeaderSize]byte
	for pos := int64(0); st.Size()-pos >= record.BatchHeaderSize; {
		if _, err := f.ReadAt(hb[:], pos); err != nil {
			break
		}
		h, ok := record.ParseHeader(hb[:])
		if !ok || pos+h.Size > st.Size() {
			break
		}
		next = h.LastOffset + 1
		pos += h.Size
	}
	return next, nil
}
