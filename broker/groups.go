package broker

import (
	"kbroker/internal/config"
	"kbroker/internal/coordinator"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/replica"
)

// startGroups starts the group coordinator and keeps its shards on the
// `__consumer_offsets` partitions this broker leads: loaded now for those
// it leads at start, and as leadership arrives or leaves with metadata
// changes.
func (b *Broker) startGroups(parts *replica.Partitions) *group.Coordinator {
	g := group.New(group.ConfigFrom(config.Layers{Static: b.cfg.Props}), coordinator.RealClock{}, b.loggers.Logger("kbroker.group"))
	open := func(snap *meta.Snapshot, t *meta.Topic, p int32) (coordinator.Log, error) {
		return parts.Log(snap, t, p)
	}
	reconcile := func(snap *meta.Snapshot) {
		if err := g.Reconcile(snap, b.cfg.NodeID, open); err != nil {
			b.log.Error("loading group coordinator partitions", "err", err)
		}
	}
	reconcile(b.store.Snapshot())
	b.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.Old.Topic(group.Topic) != ev.Cur.Topic(group.Topic) {
			reconcile(ev.Cur)
		}
	})
	return g
}
