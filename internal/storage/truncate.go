package storage

import (
	"fmt"
	"math"
	"os"
)

// TruncateTo removes every record at or past offset, as Kafka's
// UnifiedLog.truncateTo does for a follower whose log went further than
// its new leader's: the records there were never committed, and the
// follower fetches the leader's instead. The cut is at a batch boundary (a
// batch holding offset goes whole). Later segments are deleted, the
// segment cut becomes the active one, and the producer state, the aborted
// transactions and the leader epochs are rebuilt for what is left; the
// high watermark moves back if it was past the cut. Only a follower
// truncates, and consumers do not read from followers, so no read is
// under way past the cut.
func (l *Log) TruncateTo(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	if offset >= l.end.Load().offset {
		return nil
	}
	if start := l.logStart.Load(); offset < start {
		return fmt.Errorf("%w: cannot truncate to %d, below the log start offset %d", ErrOffsetOutOfRange, offset, start)
	}
	l.sealing.Wait() // no background seal of a segment about to be cut
	l.mu.RLock()
	segs := l.segs
	l.mu.RUnlock()
	i := len(segs) - 1
	for i > 0 && segs[i].base > offset {
		i--
	}
	s := segs[i]
	size := s.size.Load()
	pos, h, found, err := s.findBatch(offset, size)
	if err != nil {
		return err
	}
	end := offset
	if found {
		end = min(offset, h.BaseOffset)
	} else {
		pos = size
	}
	if err := s.truncate(pos); err != nil {
		return err
	}
	s.size.Store(pos)
	// The segment is active again: its index lives in memory, out of the
	// budget of sealed segments' indexes, and its old files are stale.
	indexes.forget(&s.index)
	os.Remove(s.path + ".index")
	os.Remove(s.path + ".timeindex")
	s.imu.Lock()
	err = s.rebuildIndexLocked(l.cfg.IndexIntervalBytes)
	s.imu.Unlock()
	if err != nil {
		return err
	}
	if pos > 0 {
		s.rollBaseTs = rollBaseUnknown // segment.ms: read from its first batch when needed
	}
	l.mu.Lock()
	l.segs = segs[: i+1 : i+1]
	l.tooBig.Store(nil) // the batches past the cut will be others
	l.mu.Unlock()
	for _, victim := range segs[i+1:] {
		if err := victim.remove(); err != nil {
			return err
		}
	}
	removeSnapshotsAbove(l.dir, end)
	l.publishEnd(&logEnd{offset: end, seg: s, pos: pos})
	l.ps = newProducerState()
	if err := l.replayProducers(); err != nil {
		return err
	}
	l.ps.truncateHead(l.logStart.Load())
	hw := min(l.hw.Load(), end)
	l.hw.Store(hw)
	l.firstUnstable.Store(math.MaxInt64)
	l.ps.txnsChanged = true
	l.ps.onHighWatermark(hw)
	l.syncUnstable()
	if l.flushedTo.Load() > end {
		l.flushedTo.Store(end)
	}
	if l.firstDirty.Load() > end {
		l.firstDirty.Store(end)
	}
	return l.epochs.truncateFrom(end)
}
