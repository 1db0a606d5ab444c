package storage

import (
	"fmt"
	"math"
	"time"

	"kbroker/internal/record"
)

// AppendAsFollower appends batches fetched from the partition's leader (whole
// batches, as the leader's log holds them) keeping everything the leader
// assigned: offsets, leader epochs, timestamps and producer sequences are
// written as they are, and producer state is updated from the batches as
// recovery does, so this replica can take over as leader. What Kafka's
// UnifiedLog.appendAsFollower checks is checked here: each batch frames and
// has a good CRC (record.ErrCorruptMessage), fits max.message.bytes
// (record.ErrMessageTooLarge) and segment.bytes (record.ErrRecordListTooLarge),
// and the batches continue the log: the first starts at or after the log end
// offset and each later one after the one before (ErrUnexpectedAppendOffset).
// A first offset past the log end is accepted, as in Kafka: the leader's
// cleaner may have removed the offsets in between.
//
// Nothing is written unless every batch passes. The high watermark does not
// move unless the log is not replicated (SetReplicated). now is the broker
// clock, which only decides segment.ms rolls.
func (l *Log) AppendAsFollower(batches []byte, now time.Time) (AppendResult, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	res := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	hdrs, err := record.StoredBatches(batches)
	if err != nil || len(hdrs) == 0 {
		return res, err
	}
	if err := l.checkFollowerBatches(hdrs); err != nil {
		return res, err
	}
	pos := 0
	for i := range hdrs {
		h := &hdrs[i]
		raw := batches[pos : pos+int(h.Size)]
		pos += int(h.Size)
		seg, err := l.maybeRoll(h.Size, h.MaxTimestamp, h.LastOffset, now)
		if err != nil {
			return res, err
		}
		if err := l.write(seg, h, raw); err != nil {
			return res, err
		}
		if err := l.replayBatch(seg, h, 0, raw); err != nil {
			return res, err
		}
		l.syncUnstable()
		l.publish(seg, h.LastOffset)
		if res.BaseOffset < 0 {
			res.BaseOffset = h.BaseOffset
		}
		res.LastOffset = h.LastOffset
	}
	return res, l.maybeFlushLocked(now)
}

// checkFollowerBatches checks sizes and offsets of fetched batches against the
// log before any is written.
func (l *Log) checkFollowerBatches(hdrs []record.BatchHeader) error {
	next := l.end.Load().offset
	for i := range hdrs {
		h := &hdrs[i]
		if h.Size > int64(l.cfg.MaxMessageBytes) {
			return fmt.Errorf("%w: replicated batch at offset %d is %d bytes, over max.message.bytes %d",
				record.ErrMessageTooLarge, h.BaseOffset, h.Size, l.cfg.MaxMessageBytes)
		}
		if h.Size > l.cfg.SegmentBytes {
			return fmt.Errorf("%w: replicated batch at offset %d is %d bytes, over segment.bytes %d",
				record.ErrRecordListTooLarge, h.BaseOffset, h.Size, l.cfg.SegmentBytes)
		}
		if h.BaseOffset < next {
			what := "the log end offset"
			if i > 0 {
				what = "the end of the batch before it"
			}
			return fmt.Errorf("%w: batch at offset %d starts below %s, %d", ErrUnexpectedAppendOffset, h.BaseOffset, what, next)
		}
		// A segment starts at the log end offset when rolled, and its index holds
		// offsets relative to that as int32: a gap wider than that would not fit.
		if h.LastOffset-next > math.MaxInt32 {
			return fmt.Errorf("%w: batch at offset %d leaves a gap after %d wider than a segment's index can span",
				ErrUnexpectedAppendOffset, h.BaseOffset, next)
		}
		next = h.LastOffset + 1
	}
	return nil
}
