package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/coordinator"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
	"kbroker/internal/txn"
)

// startTransactions starts the transaction coordinator and keeps its shards
// on the `__transaction_state` partitions this broker leads, as
// startGroups does for groups. Its markers go to the group coordinator for
// `__consumer_offsets` partitions and to the partition logs otherwise.
func (b *Broker) startTransactions(parts *replica.Partitions, groups *group.Coordinator) *txn.Coordinator {
	markers := func(ctx context.Context, m txn.Marker) error {
		if m.Topic == group.Topic {
			return groups.CompleteTransaction(ctx, m.Partition, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch)
		}
		return b.writeDataMarker(parts, m)
	}
	t := txn.New(txn.ConfigFrom(config.Layers{Static: b.cfg.Props}), txn.NewProducerIDs(b.store), markers,
		coordinator.RealClock{}, b.loggers.Logger("kbroker.txn"))
	open := func(snap *meta.Snapshot, topic *meta.Topic, p int32) (coordinator.Log, int32, error) {
		l, err := parts.Log(snap, topic, p)
		if err != nil {
			return nil, 0, err
		}
		return l, parts.State(snap, topic, p, nil).LeaderEpoch, nil
	}
	reconcile := func(snap *meta.Snapshot) {
		if err := t.Reconcile(snap, b.cfg.NodeID, open); err != nil {
			b.log.Error("loading transaction coordinator partitions", "err", err)
		}
	}
	reconcile(b.store.Snapshot())
	b.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.Old.Topic(txn.Topic) != ev.Cur.Topic(txn.Topic) {
			reconcile(ev.Cur)
		}
	})
	return t
}

// markerAppendAttempts bounds the retries of a marker racing produces for
// the log end offset.
const markerAppendAttempts = 100

// writeDataMarker appends the control batch of m to its partition's log
// here. It stands in for the data plane's WriteTxnMarker (LSO, .txnindex)
// until that is merged: the leader's Append refuses control batches, so the
// marker goes in at the log end offset it is stamped with, as a follower's
// append would, retried if a produce took that offset first.
func (b *Broker) writeDataMarker(parts *replica.Partitions, m txn.Marker) error {
	snap := b.store.Snapshot()
	t := snap.Topic(m.Topic)
	if t == nil || m.Partition < 0 || m.Partition >= t.Partitions {
		return txn.ErrPartitionGone
	}
	if leader := t.Leader(m.Partition, b.cfg.NodeID); leader != b.cfg.NodeID {
		return fmt.Errorf("partition %s-%d is led by broker %d: markers to other brokers need WriteTxnMarkers", m.Topic, m.Partition, leader)
	}
	l, err := parts.Log(snap, t, m.Partition)
	if err != nil {
		return err
	}
	now := time.Now()
	raw, err := record.EndTxnMarker(m.Commit, m.CoordinatorEpoch, m.ProducerID, m.ProducerEpoch, now.UnixMilli())
	if err != nil {
		return err
	}
	for range markerAppendAttempts {
		binary.BigEndian.PutUint64(raw[0:8], uint64(l.LogEndOffset()))
		if _, err = l.AppendAsFollower(raw, now); !errors.Is(err, storage.ErrUnexpectedAppendOffset) {
			return err
		}
	}
	return err
}
