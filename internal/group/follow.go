package group

import (
	"kbroker/internal/coordinator"
	"kbroker/internal/meta"
)

// OpenLog opens the log of a partition of t this broker leads.
type OpenLog func(snap *meta.Snapshot, t *meta.Topic, partition int32) (coordinator.Log, error)

// Reconcile loads a shard for every `__consumer_offsets` partition this
// broker (self) leads in snap and unloads those it no longer leads, so a
// group's coordinator moves with its partition's leadership as elections
// change it (Snapshot.Leader). A shard loaded in an older leader epoch is
// loaded again: another broker may have led and written in between. Call
// it at start and after every metadata change of the topic or its
// partitions.
func (c *Coordinator) Reconcile(snap *meta.Snapshot, self int32, open OpenLog) error {
	t := snap.Topic(Topic)
	if t != nil {
		c.partitions.Store(t.Partitions)
	}
	leads := func(p int32) (bool, int32) {
		if t == nil || p >= t.Partitions || snap.Leader(t, p, self) != self {
			return false, 0
		}
		return true, snap.Partition(t, p).LeaderEpoch
	}
	for _, rs := range c.rt.Shards() {
		if led, epoch := leads(rs.Partition); !led || epoch != rs.LeaderEpoch {
			c.rt.Unload(rs.Partition)
		}
	}
	if t == nil {
		return nil
	}
	var firstErr error
	for p := int32(0); p < t.Partitions; p++ {
		led, epoch := leads(p)
		if !led || c.rt.Led(p) {
			continue
		}
		l, err := open(snap, t, p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		c.rt.LoadEpoch(p, epoch, l)
	}
	return firstErr
}
