package replica

import (
	"context"
	"time"
)

// FetchRead reads the partitions of one fetch answer within its byte
// budget: each partition gets at most its own limit and what the answer
// has left, except that the first batch of the first partition with data
// comes whole even when larger (KIP-74), so a consumer always progresses.
type FetchRead struct {
	maxBytes, total int32
	// throttled is the bytes read of partitions the leader's replication
	// throttle names (ThrottledBytes).
	throttled     int
	watch         bool
	readCommitted bool
	keys          []Key // the partitions read, when watching
	// FromFiles leaves reads of storage.FileRangeMin bytes or more in
	// their segment files (Fetched.File), for a sender that sends them
	// with sendfile (plaintext listeners).
	FromFiles bool
}

// NewFetchRead starts an answer of at most maxBytes over up to partitions
// partitions; with watch it remembers the partitions it read, for a long
// poll to wait on. readCommitted is isolation_level READ_COMMITTED: reads
// stop at the last stable offset and carry the aborted transactions.
func NewFetchRead(maxBytes int32, partitions int, watch, readCommitted bool) FetchRead {
	f := FetchRead{maxBytes: maxBytes, watch: watch, readCommitted: readCommitted}
	if watch {
		f.keys = make([]Key, 0, partitions)
	}
	return f
}

// WithKeys has f remember the partitions it reads (when watching) in
// buf's array, a reused one, instead of one of its own; Keys returns it.
func (f *FetchRead) WithKeys(buf []Key) {
	if f.watch {
		f.keys = buf[:0]
	}
}

// Closing reports whether pt's log is closed or closing. A Partition kept
// beyond one request (a fetch session's) is what Lead would return for the
// same metadata snapshot until then: every change of leader, replicas or
// topic comes with a new snapshot, and a log is only replaced once closed.
func (pt *Partition) Closing() bool { return pt.log.Closing() }

// Partition checks the fetcher's leader epoch (KIP-320) and reads pt from
// offset, within partitionMax and the answer's budget. A refused epoch
// reads nothing: its offsets are -1, as Kafka answers.
func (f *FetchRead) Partition(pt *Partition, leaderEpoch int32, offset int64, partitionMax int32) (Fetched, error) {
	if err := pt.CheckLeaderEpoch(leaderEpoch); err != nil {
		return Fetched{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, err
	}
	if f.watch {
		f.keys = append(f.keys, pt.Key)
	}
	limit := max(min(partitionMax, f.maxBytes-f.total), 0)
	// Most partitions of a fetch of many have nothing to give (idle, or
	// the answer's budget is spent): answered from the offsets, without a
	// read whose result would be passed up through the log's layers.
	if hw, lso, start, ok := pt.log.ReadsNothing(offset, limit, f.total == 0, f.readCommitted); ok {
		return Fetched{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: start}, nil
	}
	fetched, err := pt.read(offset, limit, f.total == 0, f.readCommitted, f.FromFiles)
	f.total += int32(fetched.Len())
	return fetched, err
}

// Follower reads pt for the follower from (Partition.FollowerFetch)
// within partitionMax and the answer's budget; logStart is the follower's
// log start offset from its request (-1: not sent). With FromFiles, it is
// read from its segment files as a consumer's read is. A partition the
// replication throttle holds back for this follower now reads nothing
// (throttle.go), but the fetch still counts as the follower's.
func (f *FetchRead) Follower(pt *Partition, from ReplicaState, leaderEpoch int32, offset, logStart int64, partitionMax int32) (Fetched, error) {
	if f.watch {
		f.keys = append(f.keys, pt.Key)
	}
	limit := min(partitionMax, f.maxBytes-f.total)
	withhold, throttled := pt.leaderWithholds(from.ID)
	fetched, err := pt.followerFetch(from, leaderEpoch, offset, logStart, max(limit, 0), f.total == 0, f.FromFiles, withhold)
	f.total += int32(fetched.Len())
	if throttled {
		f.throttled += fetched.Len()
	}
	return fetched, err
}

// ThrottledBytes is the bytes read by Follower of partitions the leader's
// replication throttle names: the sender counts them toward its quota
// once the answer is final (Partitions.CountReplicationBytesOut), not on
// every read of a long poll.
func (f *FetchRead) ThrottledBytes() int { return f.throttled }

// Reached reports whether the answer holds at least minBytes.
func (f *FetchRead) Reached(minBytes int32) bool { return f.total >= minBytes }

// Keys are the partitions read (only when watching).
func (f *FetchRead) Keys() []Key { return f.keys }

// LongPoll runs a fetch's long poll: read builds an answer from the logs
// as they are (watching the partitions it reads when asked) and reports
// whether to send it at once (min_bytes reached, or an error). When it is
// not done and maxWait is positive, the fetch waits for appends to the
// partitions read, reading again after each, and reads a last time when
// maxWait passes. parked is the time spent waiting, which request-time
// quotas do not charge. A follower's fetch (fromReplica) reads up to the
// log end, so only new records complete it: it is not woken when only the
// high watermark moves (DelayedQueue.NotifyCommitted).
func (p *Partitions) LongPoll(ctx context.Context, maxWait time.Duration, fromReplica bool, read func(watch bool) (keys []Key, done bool)) (parked time.Duration) {
	deadline := time.Now().Add(maxWait)
	seen, await := p.delayed.Notifications(), p.delayed.Await
	if fromReplica {
		seen, await = p.delayed.RecordNotifications(), p.delayed.AwaitNewRecords
	}
	keys, done := read(maxWait > 0)
	if done || maxWait <= 0 || len(keys) == 0 {
		return 0
	}
	completed, parked := await(ctx, keys, seen, deadline, func() bool {
		_, done := read(false)
		return done
	})
	if !completed {
		read(false)
	}
	return parked
}
