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

// DeleteRecords deletes the records of pt below offset and returns the
// low watermark once it is at least offset (or timeout passed, with
// ErrDeleteRecordsTimeout). An offset past the high watermark (or below
// -1) is OFFSET_OUT_OF_RANGE (storage.ErrOffsetOutOfRange); -1 is the high
// watermark. parked is the time spent waiting for followers.
func (p *Partitions) DeleteRecords(ctx context.Context, pt *Partition, offset int64, timeout time.Duration) (lowWatermark int64, parked time.Duration, err error) {
	if offset == DeleteRecordsHighWatermark {
		offset = pt.HighWatermark()
	}
	if offset < 0 {
		return -1, 0, fmt.Errorf("%w: cannot delete records up to offset %d", storage.ErrOffsetOutOfRange, offset)
	}
	if _, err := pt.log.IncrementLogStartOffset(offset); err != nil {
		return -1, 0, err
	}
	pt.delayed.Notify(pt.Key) // long-polling fetches below the new start answer at once
	if pt.leader == nil {
		return pt.LogStartOffset(), 0, nil
	}
	reached := func() bool { return p.lowWatermark(pt) >= offset }
	if !reached() {
		seen := p.delayed.Notifications()
		_, parked = p.delayed.Await(ctx, []Key{pt.Key}, seen, time.Now().Add(timeout), reached)
	}
	low := p.lowWatermark(pt)
	if low < offset {
		return low, parked, &stateError{ErrDeleteRecordsTimeout, fmt.Sprintf("The replicas of %s-%d did not all delete the records below offset %d within the request timeout", pt.Topic, pt.Key.Partition, offset)}
	}
	return low, parked, nil
}

// lowWatermark is the smallest log start offset of pt's leader and its
// followers on live brokers (Kafka's Partition.lowWatermarkIfLeader); a
// follower that has not told its own yet counts as -1.
func (p *Partitions) lowWatermark(pt *Partition) int64 {
	low := pt.LogStartOffset()
	live := p.store.Snapshot().LiveBrokers()
	ld := pt.leader
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
