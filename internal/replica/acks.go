package replica

import (
	"context"
	"errors"
	"strconv"
	"time"

	"kbroker/internal/meta"
)

// acks=all on a partition with followers: the leader appends, then the
// produce waits in the delayed queue until the high watermark passes the
// batch (every in-sync replica has it) or the request's timeout ends, as
// Kafka's DelayedProduce does.

var (
	// ErrReplicationTimeout: the in-sync replicas did not all get the
	// records within the produce's timeout (REQUEST_TIMED_OUT). The records
	// are in the leader's log and may yet be committed.
	ErrReplicationTimeout = errors.New("replication timed out")
	// ErrNotEnoughReplicasAfterAppend: the records were committed, but by
	// fewer in-sync replicas than min.insync.replicas
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrNotEnoughReplicasAfterAppend = errors.New("not enough in-sync replicas after append")
)

// CommitWait is one partition an acks=all produce appended to and waits
// on: Err is set by AwaitCommitted.
type CommitWait struct {
	Partition  Partition
	LastOffset int64
	MinInsync  int
	Err        error
}

func (w *CommitWait) committed() bool { return w.Partition.HighWatermark() > w.LastOffset }

// AwaitCommitted waits until every wait's records are committed or timeout
// passes (or ctx ends), and sets each wait's Err: nil, or
// ErrReplicationTimeout, or ErrNotEnoughReplicasAfterAppend when the ISR
// that committed them is smaller than min.insync.replicas. parked is the
// time spent waiting.
func (p *Partitions) AwaitCommitted(ctx context.Context, waits []CommitWait, timeout time.Duration) (parked time.Duration) {
	// A wait ends when its records are committed, or when this broker no
	// longer leads the partition: as Kafka's DelayedProduce, it then
	// answers NOT_LEADER_OR_FOLLOWER at once, so the producer retries on
	// the new leader instead of waiting out its timeout.
	all := func() bool {
		snap := p.store.Snapshot()
		for i := range waits {
			if !waits[i].committed() && p.stillLeads(snap, waits[i].Partition.Key) {
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
	snap := p.store.Snapshot()
	for i := range waits {
		w := &waits[i]
		if !w.committed() && !p.stillLeads(snap, w.Partition.Key) {
			w.Err = &stateError{ErrNotLeader, "Broker " + strconv.Itoa(int(p.broker.NodeID)) + " is no longer the leader of " + w.Partition.Topic + "-" + strconv.Itoa(int(w.Partition.Key.Partition)) +
				"; the records may not be committed"}
			continue
		}
		if !w.committed() {
			w.Err = &stateError{ErrReplicationTimeout, "The in-sync replicas did not acknowledge the records of " + w.Partition.Topic + "-" + strconv.Itoa(int(w.Partition.Key.Partition)) + " within the request timeout"}
			continue
		}
		if isr := p.currentISR(snap, w.Partition.Key); len(isr) < w.MinInsync {
			w.Err = &stateError{ErrNotEnoughReplicasAfterAppend, "The size of the current ISR " + replicaSet(isr) + " is insufficient to satisfy the min.isr requirement of " +
				strconv.Itoa(w.MinInsync) + " for partition " + w.Partition.Topic + "-" + strconv.Itoa(int(w.Partition.Key.Partition))}
		}
	}
	return parked
}

// stillLeads reports whether this broker leads key's partition in snap.
func (p *Partitions) stillLeads(snap *meta.Snapshot, key Key) bool {
	t := snap.TopicByID(key.Topic)
	if t == nil || key.Partition >= t.Partitions {
		return false
	}
	return p.recordedState(snap, t, key.Partition).Leader == p.broker.NodeID
}

// currentISR is the in-sync set of key's partition in snap (nil if the
// partition is gone).
func (p *Partitions) currentISR(snap *meta.Snapshot, key Key) []int32 {
	t := snap.TopicByID(key.Topic)
	if t == nil || key.Partition >= t.Partitions {
		return nil
	}
	return p.recordedState(snap, t, key.Partition).ISR
}
