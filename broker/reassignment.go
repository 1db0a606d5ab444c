package broker

import (
	"kbroker/internal/meta"
	"kbroker/internal/replica"
)

// watchSingleReplicaLeaders hands the high watermark back to the appends
// of every partition this broker now leads alone. A partition reassigned
// from other brokers to this one alone (1 → 2), or down to one replica,
// was copied here as a follower, which gives its log's high watermark to
// a leader that counts followers (storage.Log.SetReplicated); with no
// follower left nothing would move it again, and consumers would see
// nothing new. internal/replica turns replication on when a partition gets
// followers but never off: this reconciler turns it off.
func (b *Broker) watchSingleReplicaLeaders(parts *replica.Partitions) {
	self := b.cfg.NodeID
	alone := func(snap *meta.Snapshot, t *meta.Topic, p int32) {
		r := snap.Partition(t, p)
		if len(r.Replicas) != 1 || r.Replicas[0] != self || r.Leader != self {
			return
		}
		if l, err := parts.Log(snap, t, p); err == nil {
			l.SetReplicated(false)
		}
	}
	b.store.Reconcile(func(ev meta.Event) {
		if ev.Full {
			for _, t := range ev.Cur.AllTopics() {
				for p := int32(0); p < t.Partitions; p++ {
					if rec := ev.Cur.Partition(t, p); len(rec.Replicas) == 1 && rec.PartitionEpoch > 0 {
						alone(ev.Cur, t, p)
					}
				}
			}
			return
		}
		for _, k := range ev.ChangedPartitions() {
			if t := ev.Cur.TopicByID(k.Topic); t != nil && k.Partition < t.Partitions {
				alone(ev.Cur, t, k.Partition)
			}
		}
	})
}
