package broker

import (
	"context"
	"slices"
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/coordinator"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/replica"
)

// startGroups starts the group coordinator and keeps its shards on the
// `__consumer_offsets` partitions this broker leads: loaded now for those
// it leads at start, and as leadership arrives or leaves with metadata
// changes.
func (b *Broker) startGroups(parts *replica.Partitions) *group.Coordinator {
	cfg := group.ConfigFrom(config.Layers{Static: b.cfg.Props})
	// Consumer groups (KIP-848) resolve their subscriptions against the
	// metadata as it is when they heartbeat.
	cfg.Metadata = b.store.Snapshot
	// A group's own session timeout and heartbeat interval (group configs,
	// resource type 32) are read at each heartbeat, so a change applies at
	// the next one without an applier.
	cfg.GroupSettings = b.configs.GroupSettings
	g := group.New(cfg, coordinator.RealClock{}, b.loggers.Logger("kbroker.group"))
	// A group write waits for the offsets topic's in-sync replicas at most
	// offsets.commit.timeout.ms, as Kafka's group coordinator does.
	timeout := b.msConfig("offsets.commit.timeout.ms")
	open := func(snap *meta.Snapshot, t *meta.Topic, p int32) (coordinator.Log, error) {
		return coordinator.NewPartitionLog(parts, b.store, snap, t, p, timeout)
	}
	reconcile := func(snap *meta.Snapshot) {
		if err := g.Reconcile(snap, b.cfg.NodeID, open); err != nil {
			b.log.Error("loading group coordinator partitions", "err", err)
		}
	}
	reconcile(b.store.Snapshot())
	b.store.OnChange(func(ev meta.Event) {
		if internalTopicChanged(ev, group.Topic) {
			reconcile(ev.Cur)
		}
	})
	b.store.OnChange(func(ev meta.Event) { dropDeletedTopicOffsets(g, ev) })
	b.watchGroups(g)
	return g
}

// internalTopicChanged reports whether ev may have moved the leadership of
// a partition of the internal topic name: the topic itself changed
// (created, deleted, more partitions) or one of its partition records did
// (an election, an ISR change).
func internalTopicChanged(ev meta.Event, name string) bool {
	old, cur := ev.Old.Topic(name), ev.Cur.Topic(name)
	if ev.Full || old != cur {
		return true
	}
	if cur == nil {
		return false
	}
	for _, k := range ev.ChangedPartitions() {
		if k.Topic == cur.ID {
			return true
		}
	}
	return false
}

// msConfig is a static broker config in milliseconds (the catalog checked
// it is a number).
func (b *Broker) msConfig(name string) time.Duration {
	n, _ := strconv.Atoi(config.BrokerValue(name, config.Layers{Static: b.cfg.Props}))
	return time.Duration(n) * time.Millisecond
}

// deletedOffsetsTimeout bounds how long DeleteTopics waits for the group
// coordinator's shards to tombstone the deleted topics' offsets; a shard
// slower than that (one still replaying) finishes on its own.
const deletedOffsetsTimeout = 5 * time.Second

// dropDeletedTopicOffsets removes the committed offsets of every topic the
// change deleted (or recreated with a new ID, which Kafka sees as a
// deletion) from the groups here, before DeleteTopics answers.
func dropDeletedTopicOffsets(g *group.Coordinator, ev meta.Event) {
	names := ev.ChangedTopics()
	if ev.Full {
		names = slices.Collect(ev.Old.TopicNames())
	}
	var deleted []string
	for _, name := range names {
		t, nt := ev.Old.Topic(name), ev.Cur.Topic(name)
		if t != nil && (nt == nil || nt.ID != t.ID) {
			deleted = append(deleted, name)
		}
	}
	if len(deleted) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deletedOffsetsTimeout)
	defer cancel()
	g.TopicsDeleted(ctx, deleted)
}

// groupStatsTimeout bounds how long a scrape waits for the coordinator's
// shards to copy their groups; a shard slower than that is left out of
// that scrape rather than holding /metrics up.
const groupStatsTimeout = 2 * time.Second

// watchGroups exports the group metrics, read at scrape time: lag is the
// high watermark of the partition's log here (what a consumer can read)
// minus the committed offset.
func (b *Broker) watchGroups(g *group.Coordinator) {
	maxSeries, _ := strconv.Atoi(config.BrokerValue("kbroker.metrics.group.lag.max.series", config.Layers{Static: b.cfg.Props}))
	logs := b.logs
	b.metrics.WatchGroups(metrics.GroupSource{
		MaxLagSeries: maxSeries,
		HighWatermark: func(topic string, partition int32) (int64, bool) {
			l := logs.Get(topic, partition)
			if l == nil {
				return 0, false
			}
			return l.HighWatermark(), true
		},
		Stats: func() metrics.GroupStats {
			ctx, cancel := context.WithTimeout(context.Background(), groupStatsTimeout)
			defer cancel()
			st := g.Stats(ctx)
			out := metrics.GroupStats{Rebalances: st.Rebalances, CommitsOK: st.CommitsOK, CommitsFailed: st.CommitsFailed}
			for state, n := range st.Groups {
				out.Groups = append(out.Groups, metrics.GroupCount{State: state.String(), Type: "classic", Groups: n})
			}
			for state, n := range st.ConsumerGroups {
				out.Groups = append(out.Groups, metrics.GroupCount{State: state, Type: "consumer", Groups: n})
			}
			out.Offsets = make([]metrics.GroupOffset, len(st.Offsets))
			for i, o := range st.Offsets {
				out.Offsets[i] = metrics.GroupOffset{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Committed: o.Offset}
			}
			return out
		},
	})
}
