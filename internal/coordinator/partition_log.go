package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
)

// ErrNotLeader is a write to a partition this broker no longer leads: the
// shard is about to be unloaded, and its client must find the new
// coordinator. It wraps storage.ErrClosed, which the coordinators already
// answer NOT_COORDINATOR, as Kafka's answer NOT_LEADER_OR_FOLLOWER from
// their log (CoordinatorOperationExceptionHelper): to the shard the log is
// closed.
var ErrNotLeader = fmt.Errorf("coordinator: this broker no longer leads the partition (%w)", storage.ErrClosed)

// PartitionLog is the log of an internal-topic partition as its shard
// writes it: through the partition's leader (replica.Partitions.Lead), so
// a broker that no longer leads writes nothing (ErrNotLeader), batches
// carry the leader epoch, followers are woken to copy them and the high
// watermark moves; and with acks=-1, as Kafka's coordinators write: fewer
// in-sync replicas than the topic's min.insync.replicas refuse the write
// (replica.ErrNotEnoughReplicas), and a write counts only once the in-sync
// replicas hold it (Committer), within the write timeout. The shards'
// error mapping turns both into COORDINATOR_NOT_AVAILABLE, as Kafka maps
// NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT. With one replica every
// append commits at once and nothing waits.
type PartitionLog struct {
	*storage.Log // replay reads and offsets

	parts     *replica.Partitions
	store     *meta.Store
	topic     meta.TopicID
	partition int32
	timeout   time.Duration
}

// NewPartitionLog opens partition of t (an internal topic of snap) for its
// shard; writeTimeout bounds how long a write waits for the replicas
// (offsets.commit.timeout.ms for groups, request.timeout.ms for
// transactions, as in Kafka).
func NewPartitionLog(parts *replica.Partitions, store *meta.Store, snap *meta.Snapshot, t *meta.Topic, partition int32, writeTimeout time.Duration) (*PartitionLog, error) {
	l, err := parts.Log(snap, t, partition)
	if err != nil {
		return nil, err
	}
	return &PartitionLog{Log: l, parts: parts, store: store, topic: t.ID, partition: partition, timeout: writeTimeout}, nil
}

// lead is the partition as its leader serves it now, with its
// min.insync.replicas.
func (l *PartitionLog) lead() (replica.Partition, int, error) {
	snap := l.store.Snapshot()
	t := snap.TopicByID(l.topic)
	if t == nil || l.partition >= t.Partitions {
		return replica.Partition{}, 0, ErrNotLeader
	}
	pt, err := l.parts.Lead(snap, t, l.partition)
	if errors.Is(err, replica.ErrNotLeader) {
		return replica.Partition{}, 0, fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	if err != nil {
		return replica.Partition{}, 0, err
	}
	return pt, l.parts.MinInsyncReplicas(snap, t.Name), nil
}

// Append appends a batch of the shard's records as the leader, acks=-1.
func (l *PartitionLog) Append(batch []byte, now time.Time) (storage.AppendResult, error) {
	pt, minInsync, err := l.lead()
	if err != nil {
		return storage.AppendResult{}, err
	}
	return pt.AppendAsLeader(batch, now, -1, minInsync)
}

// AppendAsCoordinator appends a transactional batch of the shard's
// (TxnOffsetCommit) as the leader, acks=-1.
func (l *PartitionLog) AppendAsCoordinator(batch []byte, now time.Time) (storage.AppendResult, error) {
	pt, minInsync, err := l.lead()
	if err != nil {
		return storage.AppendResult{}, err
	}
	if err := pt.CheckInSync(minInsync, pt.Topic, l.partition); err != nil {
		return storage.AppendResult{}, err
	}
	return pt.AppendAsCoordinator(batch, now)
}

// AppendTxnMarker appends a transaction marker as the leader, acks=-1 (as
// Kafka writes WriteTxnMarkers). Only the shard's loop writes the
// partition, so the marker is the record before the new log end.
func (l *PartitionLog) AppendTxnMarker(m storage.TxnMarker, now time.Time) (storage.AppendResult, error) {
	pt, minInsync, err := l.lead()
	if err != nil {
		return storage.AppendResult{}, err
	}
	if err := pt.CheckInSync(minInsync, pt.Topic, l.partition); err != nil {
		return storage.AppendResult{}, err
	}
	if err := pt.AppendTxnMarker(m, now); err != nil {
		return storage.AppendResult{}, err
	}
	end := l.LogEndOffset()
	return storage.AppendResult{BaseOffset: end - 1, LastOffset: end - 1, LogAppendTime: -1, LogStartOffset: l.LogStartOffset()}, nil
}

// AwaitCommitted waits in the partitions' delayed queue until the high
// watermark passes lastOffset: replica.ErrReplicationTimeout after the
// write timeout, replica.ErrNotEnoughReplicasAfterAppend when fewer than
// min.insync.replicas hold it, ErrNotLeader when leadership or the shard
// went away meanwhile.
func (l *PartitionLog) AwaitCommitted(ctx context.Context, lastOffset int64) error {
	pt, minInsync, err := l.lead()
	if err != nil {
		return err
	}
	waits := []replica.CommitWait{{Partition: pt, LastOffset: lastOffset, MinInsync: minInsync}}
	l.parts.AwaitCommitted(ctx, waits, l.timeout)
	if waits[0].Err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: the shard stopped while its write waited for the replicas", ErrNotLeader)
	}
	return waits[0].Err
}
