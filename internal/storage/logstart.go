package storage

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The log start offset. It is the base of the first segment until
// DeleteRecords (or a follower learning its leader's) moves it inside the
// log, as Kafka's UnifiedLog.maybeIncrementLogStartOffset does: reads
// below it are OFFSET_OUT_OF_RANGE, ListOffsets earliest answers it, and
// the segments wholly below it are deleted. A start inside a segment
// cannot be read back from the segment files, so it is persisted in the
// partition's directory, in "log-start-offset-checkpoint" (Kafka keeps one
// such file per log directory with a line per partition; kbroker keeps
// each partition's files in its own directory, as it does the
// leader-epoch-checkpoint). Its format is Kafka's with one entry: a
// version line "0", a count line "1", then the offset.

const logStartCheckpointFile = "log-start-offset-checkpoint"

// readLogStartCheckpoint is the log start offset persisted in dir (-1:
// none, or unreadable, in which case the first segment's base stands).
func readLogStartCheckpoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, logStartCheckpointFile))
	if err != nil {
		return -1
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || strings.TrimSpace(lines[0]) != "0" || strings.TrimSpace(lines[1]) != "1" {
		return -1
	}
	off, err := strconv.ParseInt(strings.TrimSpace(lines[2]), 10, 64)
	if err != nil || off < 0 {
		return -1
	}
	return off
}

func writeLogStartCheckpoint(dir string, offset int64) error {
	data := fmt.Appendf(nil, "0\n1\n%d\n", offset)
	if err := replaceFile(filepath.Join(dir, logStartCheckpointFile), data); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrStorage, logStartCheckpointFile, err)
	}
	return nil
}

// IncrementLogStartOffset moves the log start offset up to offset, which
// must not pass the high watermark (Kafka: OFFSET_OUT_OF_RANGE, as records
// not yet committed cannot be deleted). A lower offset changes nothing. It
// returns the log start offset after the call. The new start is on disk
// before the call returns, so a crash cannot bring the deleted records
// back; the segments wholly below it are deleted then too.
func (l *Log) IncrementLogStartOffset(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	start := l.logStart.Load()
	if hw := l.hw.Load(); offset > hw {
		return start, fmt.Errorf("%w: cannot delete records up to offset %d: the high watermark is %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset <= start {
		return start, nil
	}
	if err := writeLogStartCheckpoint(l.dir, offset); err != nil {
		return start, err
	}
	l.logStart.Store(offset)
	l.ps.truncateHead(offset)
	// Whole segments below the new start go now (Kafka's retention thread
	// deletes them at its next pass as log-start-offset breaches).
	_, err := l.deleteOldest(func(*segment, int64) bool { return true }, offset)
	if eerr := l.epochs.truncateFromStart(offset); err == nil {
		err = eerr
	}
	return offset, err
}

// loadLogStart applies the persisted log start offset after recovery: it
// stands when it is inside the log (a checkpoint left below the first
// segment by retention says nothing new; one past the log end is clamped,
// as recovery may have cut the tail it pointed into).
func (l *Log) loadLogStart() {
	cp := readLogStartCheckpoint(l.dir)
	if cp <= l.logStart.Load() {
		return
	}
	l.logStart.Store(min(cp, l.end.Load().offset))
	l.ps.truncateHead(l.logStart.Load())
}

// TruncateFullyAndStartAt empties the log and starts it again at offset,
// as Kafka's follower does when its whole log is below its leader's log
// start offset (the leader deleted, with DeleteRecords or retention, the
// records the follower would fetch next): nothing it holds is still in
// the leader's log, so it keeps nothing and fetches from the leader's
// start. Only a follower calls it.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	l.sealing.Wait()
	if err := writeLogStartCheckpoint(l.dir, offset); err != nil {
		return err
	}
	l.mu.RLock()
	old := l.segs
	l.mu.RUnlock()
	// The new segment must not collide with an old one of the same base:
	// those go first.
	for _, s := range old {
		if err := s.remove(); err != nil {
			return err
		}
	}
	s, err := createSegment(l.dir, offset, l.cfg.IndexIntervalBytes)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.segs = []*segment{s}
	l.tooBig.Store(nil)
	l.mu.Unlock()
	removeSnapshotsAbove(l.dir, -1)
	l.publishEnd(&logEnd{offset: offset, seg: s, pos: 0})
	l.logStart.Store(offset)
	l.hw.Store(offset)
	l.ps = newProducerState()
	l.firstUnstable.Store(math.MaxInt64)
	l.flushedTo.Store(offset)
	l.firstDirty.Store(offset)
	l.notify()
	return l.epochs.clear()
}
