package storage

import (
	"math"
	"time"
)

// EnforceRetention deletes whole closed segments past retention.ms (by the
// segment's largest timestamp) or retention.bytes, and rolls the active segment when
// segment.ms has passed; never deletes the active segment (rolls first if it is
// wholly expired, as Kafka). Segments are deleted only when cleanup.policy
// includes delete: a compact-only log keeps them (UnifiedLog.deleteOldSegments).
// It also forgets idempotent producers idle for producer.id.expiration.ms.
// Returns how many segments it deleted.
func (l *Log) EnforceRetention(now time.Time) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	nowMs := now.UnixMilli()
	l.ps.expire(nowMs, l.cfg.ProducerIDExpirationMs)
	active := l.active()
	if active.size.Load() > 0 && active.timeWaited(nowMs, nowMs) > l.cfg.rollMs() {
		if _, err := l.roll(); err != nil {
			return 0, err
		}
	}
	if !l.cfg.CleanupPolicy.Delete {
		return 0, nil
	}
	deleted := 0
	// Kafka applies retention.ms, then retention.bytes, each deleting a prefix of
	// the segments.
	if l.cfg.RetentionMs >= 0 {
		n, err := l.deleteOldest(func(s *segment, _ int64) bool {
			return nowMs-s.largestTimestamp() > l.cfg.RetentionMs
		}, math.MaxInt64)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	if l.cfg.RetentionBytes >= 0 {
		excess := l.Size() - l.cfg.RetentionBytes
		n, err := l.deleteOldest(func(s *segment, size int64) bool {
			if excess-size < 0 {
				return false
			}
			excess -= size
			return true
		}, math.MaxInt64)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// deleteOldest deletes the longest prefix of segments satisfying pred. The last
// segment counts only if non-empty; if it is included, a new active segment is
// rolled first so the log always has one (Kafka's deleteSegments). As in
// Kafka's UnifiedLog.deletableSegments, a segment holding offsets at or above
// the high watermark is kept: they are not committed yet (on a log that is
// not replicated the high watermark is the log end, so this never binds).
//
// Only segments ending at or below below are deleted (math.MaxInt64 for
// retention; the log start offset when it moves, log-start-offset
// breaches in Kafka's words). The log start offset becomes the first
// remaining segment's base, unless it is already past it (inside that
// segment, after DeleteRecords).
func (l *Log) deleteOldest(pred func(s *segment, size int64) bool, below int64) (int, error) {
	l.mu.RLock()
	segs := l.segs
	l.mu.RUnlock()
	hw, end := l.hw.Load(), l.end.Load().offset
	n := 0
	for i, s := range segs {
		size := s.size.Load()
		if i == len(segs)-1 && size == 0 {
			break
		}
		next := end
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		if next > hw || next > below || !pred(s, size) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if _, err := l.roll(); err != nil {
			return 0, err
		}
	}
	l.mu.Lock()
	victims := l.segs[:n]
	l.segs = l.segs[n:]
	l.logStart.Store(max(l.logStart.Load(), l.segs[0].base))
	l.mu.Unlock()
	l.ps.truncateHead(l.logStart.Load())
	var firstErr error
	for _, s := range victims {
		if err := s.remove(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return n, firstErr
}
