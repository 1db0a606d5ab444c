package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Flushing follows Kafka's: nothing is fsynced per append by default. A log
// counts the offsets appended since its last flush (Kafka's unflushed
// messages, log end offset minus recovery point) and flushes once they reach
// flush.messages; the Manager's periodic check flushes the logs whose last
// flush is flush.ms old. A flush syncs the active segment's .log and waits for
// the seals of segments rolled before it, so that everything below the log
// end offset is on disk.

// UnflushedMessages is how many offsets were appended since the last flush.
func (l *Log) UnflushedMessages() int64 { return l.end.Load().offset - l.flushedTo.Load() }

// LastFlushTime is when the log was last flushed (opened, if never), in ms.
func (l *Log) LastFlushTime() int64 { return l.lastFlush.Load() }

// maybeFlushLocked flushes after an append once flush.messages were appended
// since the last flush. Caller holds appendMu.
func (l *Log) maybeFlushLocked(now time.Time) error {
	if l.UnflushedMessages() < l.cfg.FlushMessages {
		return nil
	}
	return l.flushLocked(now)
}

// flushIfDue flushes the log if it holds unflushed messages and was last
// flushed flush.ms ago or more (Kafka's LogManager.flushDirtyLogs).
func (l *Log) flushIfDue(now time.Time) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	if l.UnflushedMessages() <= 0 || now.UnixMilli()-l.lastFlush.Load() < l.cfg.FlushMs {
		return nil
	}
	return l.flushLocked(now)
}

// flushLocked makes every offset below the log end durable. Caller holds
// appendMu, so no segment is rolled meanwhile.
func (l *Log) flushLocked(now time.Time) error {
	end := l.end.Load()
	if l.lastSeal != nil {
		<-l.lastSeal
	}
	if l.sealFailed.Load() {
		return fmt.Errorf("%w: flushing %s: a rolled segment failed to sync", ErrStorage, l.dir)
	}
	if err := l.creation.sync(); err != nil {
		return err
	}
	if err := end.seg.sync(); err != nil && !errors.Is(err, errSegmentGone) {
		return err
	}
	l.flushedTo.Store(end.offset)
	l.lastFlush.Store(now.UnixMilli())
	return nil
}

// sync fsyncs the segment's .log.
func (s *segment) sync() error {
	f, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: syncing %s.log: %v", ErrStorage, s.path, err)
	}
	return nil
}

// flushCheckInterval is FlushCheckIntervalMs as a duration; ok=false when the
// check is off (Long.MAX, Kafka's default, or not positive).
func (m *Manager) flushCheckInterval() (time.Duration, bool) {
	ms := m.FlushCheckIntervalMs
	if ms <= 0 || ms >= math.MaxInt64/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// runFlusher runs the periodic flush check until ctx ends, if it is on.
func (m *Manager) runFlusher(ctx context.Context) {
	interval, ok := m.flushCheckInterval()
	if !ok {
		return
	}
	everyTick(ctx, interval, m.flushDirtyLogs)
}

// flushDirtyLogs flushes every open log whose flush.ms has passed.
func (m *Manager) flushDirtyLogs(now time.Time) {
	for _, l := range m.openLogs() {
		if err := l.flushIfDue(now); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("log flush", "dir", l.dir, "err", err)
		}
	}
}
