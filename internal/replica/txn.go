package replica

import (
	"context"
	"fmt"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// TxnMarker is a transaction coordinator's request to end a producer's
// transaction in one partition (one marker of WriteTxnMarkers): commit or
// abort, with the producer epoch the transaction ends with (which may
// bump the producer's) and the coordinator's epoch.
type TxnMarker = storage.TxnMarker

// WriteTxnMarker appends a commit or abort marker to a partition this broker
// leads (ErrNotLeader otherwise; meta.ErrUnknownTopic for a topic or
// partition snap does not have), as Kafka's partition leader does for
// WriteTxnMarkers: the producer's transaction ends, the last stable offset
// moves on and the fetches waiting on the partition are woken. The
// marker's producer and coordinator epochs are checked by the log
// (storage.ErrInvalidProducerEpoch, storage.ErrTransactionCoordinatorFenced).
// Markers for `__consumer_offsets` belong to the group coordinator, which
// must see them too; the caller routes those there. On a replicated
// partition the marker waits for the in-sync replicas at most timeout:
// Kafka's WriteTxnMarkers append waits the broker's request.timeout.ms.
func (p *Partitions) WriteTxnMarker(ctx context.Context, snap *meta.Snapshot, topic string, partition int32, m TxnMarker, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := snap.Topic(topic)
	if t == nil || partition < 0 || partition >= t.Partitions {
		return fmt.Errorf("%w: %s-%d", meta.ErrUnknownTopic, topic, partition)
	}
	pt, err := p.Lead(snap, t, partition)
	if err != nil {
		return err
	}
	if !pt.Replicated() {
		return pt.AppendTxnMarker(m, time.Now())
	}
	// Kafka appends markers with acks=-1: the coordinator writes
	// CompleteCommit or CompleteAbort once every marker is acknowledged,
	// so a marker acknowledged before the in-sync replicas hold it is lost
	// with its leader, and the partition's new leader keeps the
	// transaction open (its last stable offset stuck) for ever. Fewer
	// in-sync replicas than min.insync.replicas refuse it
	// (NOT_ENOUGH_REPLICAS); the wait's errors (REQUEST_TIMED_OUT,
	// NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND) make the
	// coordinator write the marker again.
	minInsync := p.MinInsyncReplicas(snap, topic)
	if err := pt.CheckInSync(minInsync, topic, partition); err != nil {
		return err
	}
	offset, err := pt.appendTxnMarker(m, time.Now())
	if err != nil {
		return err
	}
	waits := []CommitWait{{Partition: pt, LastOffset: offset, MinInsync: minInsync}}
	p.AwaitCommitted(ctx, waits, timeout)
	return waits[0].Err
}

// AppendTxnMarker appends a transaction marker as the partition's leader
// and wakes what waits on the partition (a read_committed fetch waits for
// the last stable offset to move).
func (pt *Partition) AppendTxnMarker(m TxnMarker, now time.Time) error {
	_, err := pt.appendTxnMarker(m, now)
	return err
}

// appendTxnMarker is AppendTxnMarker returning the marker's offset.
func (pt *Partition) appendTxnMarker(m TxnMarker, now time.Time) (offset int64, err error) {
	res, err := pt.log.AppendTxnMarker(m, now)
	if err != nil {
		return 0, err
	}
	pt.appended()
	return res.LastOffset, nil
}

// AppendAsCoordinator appends a coordinator's own batch (a transactional
// offset commit of `__consumer_offsets`: transactional, without sequence
// numbers, storage.Log.AppendAsCoordinator) as the partition's leader, and
// lets the leader commit it and the waiting fetches (followers' included)
// see it, as AppendAsLeader does for a producer's batch.
func (pt *Partition) AppendAsCoordinator(batch []byte, now time.Time) (storage.AppendResult, error) {
	res, err := pt.log.AppendAsCoordinator(batch, now)
	if err == nil && !res.Duplicate {
		pt.appended()
	}
	return res, err
}

// appended is the log end having moved: a leader whose followers are all
// out of the ISR commits alone, and what waits on the partition wakes.
func (pt *Partition) appended() {
	if pt.leader != nil {
		pt.leader.onAppend()
	}
	pt.delayed.Notify(pt.Key)
}
