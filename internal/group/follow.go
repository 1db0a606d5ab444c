package group

import (
	"kbroker/internal/coordinator"
	"kbroker/internal/meta"
)

// OpenLog opens the log of a partition of t this broker leads.
type OpenLog func(snap *meta.Snapshot, t *meta.Topic, partition int32) (coordinator.Log, error)

// Reconcile loads a shard for every `__consumer_offsets` partition this
// broker (self) leads in snap and unloads those it no longer leads, so a
// group's coordinator moves with its partition. Call it at start and after
// every metadata change.
func (c *Coordinator) Reconcile(snap *meta.Snapshot, self int32, open OpenLog) error {
	t := snap.Topic(Topic)
	if t != nil {
		c.partitions.Store(t.Partitions)
	}
	var firstErr error
	for _, rs := range c.rt.Shards() {
		if t == nil || rs.Partition >= t.Partitions || t.Leader(rs.Partition, self) != self {
			c.rt.Unload(rs.Partition)
		}
	}
	if t == nil {
		return nil
	}
	for p := int32(0); p < t.Partitions; p++ {
		if t.Leader(p, self) != self || c.rt.Led(p) {
			continue
		}
		l, err := open(snap, t, p)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		c.rt.Load(p, l)
	}
	return firstErr
}
