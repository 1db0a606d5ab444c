package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"kbroker/internal/storage"
)

// DeleteRecords on the leader, as Kafka's ReplicaManager.deleteRecords and
// DelayedDeleteRecords: the leader moves its log start offset, then the
// request waits until every live replica has moved its own — the low
// watermark, the smallest log start offset among the leader and its live
// followers, reaches the offset asked. Followers learn the leader's log
// start offset from each fetch answer (fetcher.go) and send their own in
// each fetch request, which is how the leader sees them move.

// ErrDeleteRecordsTimeout: the followers did not all move their log start
// offset within the request's timeout (REQUEST_TIMED_OUT). The leader's
// has moved; the followers will follow.
var ErrDeleteRecordsTimeout = errors.New("delete records timed out")

// DeleteRecordsHighWatermark is the offset that asks DeleteRecords to
// delete everything below the high watermark (Kafka's
// DeleteRecordsRequest.HIGH_WATERMARK).
const DeleteRecordsHighWatermark = -1

// DeleteWait is one partition of a DeleteRecords: the leader has moved
// its log start offset to Offset and waits for its followers.
// AwaitLowWatermarks sets LowWatermark and Err.
type DeleteWait struct {
	Partition    Partition
	Offset       int64
	LowWatermark int64
	Err          error
}

// DeleteRecords deletes the records of pt below offset in the leader's
// log and returns the offset the low watermark must reach. An offset past
// the high watermark (or below -1) is OFFSET_OUT_OF_RANGE
// (storage.ErrOffsetOutOfRange); -1 is the high watermark.
func (pt *Partition) DeleteRecords(offset int64) (int64, error) {
	if offset == DeleteRecordsHighWatermark {
		offset = pt.HighWatermark()
	}
	if offset < 0 {
		return -1, fmt.Errorf("%w: The offset %d for partition %s-%d is not valid", storage.ErrOffsetOutOfRange, offset, pt.Topic, pt.Key.Partition)
	}
	if _, err := pt.log.IncrementLogStartOffset(offset); err != nil {
		return -1, err
	}
	pt.delayed.Notify(pt.Key) // long-polling fetches below the new start answer at once
	return offset, nil
}

// AwaitLowWatermarks waits until the low watermark of every wait's
// partition reaches its offset, or timeout passes (or ctx ends), as
// Kafka's DelayedDeleteRecords, and sets each wait's LowWatermark, or Err
// (ErrDeleteRecordsTimeout, or ErrNotLeader when leadership moved
// meanwhile) with LowWatermark -1. A partition without followers is done
// at once. parked is the time spent waiting.
func (p *Partitions) AwaitLowWatermarks(ctx context.Context, waits []DeleteWait, timeout time.Duration) (parked time.Duration) {
	reached := func(w *DeleteWait) bool {
		return !p.leadsInEpoch(&w.Partition) || p.lowWatermark(&w.Partition) >= w.Offset
	}
	all := func() bool {
		for i := range waits {
			if !reached(&waits[i]) {
				return false
			}
		}
		return true
	}
	seen := p.delayed.Notifications()
	if !all() {
		keys := make([]Key, len(waits))
		for i := range waits {
			keys[i] = waits[i].Partition.Key
		}
		_, parked = p.delayed.Await(ctx, keys, seen, time.Now().Add(timeout), all)
	}
	for i := range waits {
		w := &waits[i]
		if !p.leadsInEpoch(&w.Partition) {
			// As DelayedDeleteRecords: the partition moved while waiting.
			w.LowWatermark, w.Err = -1, &stateError{ErrNotLeader, fmt.Sprintf("Broker %d is no longer the leader of %s-%d", p.broker.NodeID, w.Partition.Topic, w.Partition.Key.Partition)}
			continue
		}
		if w.LowWatermark = p.lowWatermark(&w.Partition); w.LowWatermark < w.Offset {
			w.LowWatermark = -1
			w.Err = &stateError{ErrDeleteRecordsTimeout, fmt.Sprintf("The replicas of %s-%d did not all delete the records below offset %d within the request timeout", w.Partition.Topic, w.Partition.Key.Partition, w.Offset)}
		}
	}
	return parked
}

// leadsInEpoch reports whether this broker still leads pt in its leader
// epoch.
func (p *Partitions) leadsInEpoch(pt *Partition) bool {
	snap := p.store.Snapshot()
	t := snap.TopicByID(pt.Key.Topic)
	if t == nil || pt.Key.Partition >= t.Partitions {
		return false
	}
	st := p.recordedState(snap, t, pt.Key.Partition)
	return st.Leader == p.broker.NodeID && st.LeaderEpoch == pt.LeaderEpoch
}

// lowWatermark is the smallest log start offset of pt's leader and its
// followers on live brokers (Kafka's Partition.lowWatermarkIfLeader); a
// follower that has not told its own yet counts as -1.
func (p *Partitions) lowWatermark(pt *Partition) int64 {
	low := pt.LogStartOffset()
	ld := pt.leader
	if ld == nil {
		return low
	}
	live := p.store.Snapshot().LiveBrokers()
	ld.mu.Lock()
	defer ld.mu.Unlock()
	for id, f := range ld.followers {
		if _, ok := live[id]; ok && f.logStart < low {
			low = f.logStart
		}
	}
	return low
}

// recordLogStart notes the log start offset follower id sent with its
// fetch; it reports whether it moved.
func (ld *leadership) recordLogStart(id int32, logStart int64) bool {
	if logStart < 0 {
		return false
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	f := ld.followers[id]
	if f == nil || f.logStart == logStart {
		return false
	}
	f.logStart = logStart
	return true
}

// followLogStart moves a follower's log start offset up to the leader's
// (leaderStart, from a fetch answer), never past what the follower holds
// committed, as Kafka's follower does after each fetch.
func followLogStart(l *storage.Log, leaderStart int64) error {
	if leaderStart <= l.LogStartOffset() {
		return nil
	}
	_, err := l.IncrementLogStartOffset(min(leaderStart, l.HighWatermark()))
	return err
}
