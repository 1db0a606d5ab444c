package storage

import (
	"fmt"
	"time"

	"kbroker/internal/record"
)

// TxnMarker is what a transaction coordinator asks a partition leader to
// write when a transaction ends (WriteTxnMarkers): a commit or abort
// marker for the producer's transaction in this partition.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// AppendTxnMarker appends a transaction marker as leader, as Kafka's
// UnifiedLog.appendAsLeader with the coordinator's origin does: the marker's
// producer epoch may not be below the producer's (ErrInvalidProducerEpoch)
// nor its coordinator epoch below the last marker's
// (ErrTransactionCoordinatorFenced). The producer's ongoing transaction, if
// any, ends; an abort is added to the segment's aborted-transaction index;
// the last stable offset moves on once the high watermark passes the
// marker. A marker for a producer with no ongoing transaction is written
// all the same (a coordinator retrying, or aborting a transaction that
// wrote nothing here). now is the broker clock, the marker's timestamp.
func (l *Log) AppendTxnMarker(m TxnMarker, now time.Time) (AppendResult, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return AppendResult{}, fmt.Errorf("%w: transaction marker for producer id %d epoch %d", record.ErrInvalidRecord, m.ProducerID, m.ProducerEpoch)
	}
	next := l.end.Load().offset
	if err := l.ps.checkMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, next); err != nil {
		return AppendResult{}, err
	}
	nowMs := now.UnixMilli()
	raw, err := record.EndTxnMarker(m.Commit, m.CoordinatorEpoch, m.ProducerID, m.ProducerEpoch, nowMs)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	seg, err := l.maybeRoll(int64(len(raw)), nowMs, next, now)
	if err != nil {
		return AppendResult{}, err
	}
	h, _ := record.Restamp(raw, next, l.epoch.Load())
	if err := l.write(seg, &h, raw); err != nil {
		return AppendResult{}, err
	}
	t, done := l.ps.endTxn(m.ProducerID, m.ProducerEpoch, record.Marker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, next, nowMs)
	var indexErr error
	if done {
		indexErr = l.indexCompleted(seg, t)
	}
	l.syncUnstable()
	l.publish(seg, next)
	res := AppendResult{BaseOffset: next, LastOffset: next, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if indexErr != nil {
		// The marker is in the log and ended the transaction; recovery
		// rebuilds the index entry the write lost.
		return res, indexErr
	}
	return res, l.maybeFlushLocked(now)
}
