package broker

// Replication's wiring: in a cluster, the replica fetchers that copy the
// partitions this broker follows from their leaders, over the inter-broker
// listener. The single broker of a bbolt store follows nothing and starts
// none.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/cluster"
	"kbroker/internal/config"
	"kbroker/internal/controller"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/replica"
)

// startReplication starts the replica fetchers when the broker is part of
// a cluster.
func (b *Broker) startReplication(parts *replica.Partitions) {
	if _, single := b.member.(*cluster.Local); single {
		return
	}
	static := config.Layers{Static: b.cfg.Props}
	num := func(name string) int {
		n, _ := strconv.Atoi(config.BrokerValue(name, static)) // the catalog checked it
		return n
	}
	opts := replica.FetcherOptions{
		MaxWait:           time.Duration(num("replica.fetch.wait.max.ms")) * time.Millisecond,
		MinBytes:          int32(num("replica.fetch.min.bytes")),
		PartitionMaxBytes: int32(num("replica.fetch.max.bytes")),
		MaxBytes:          int32(num("replica.fetch.response.max.bytes")),
		Backoff:           time.Duration(num("replica.fetch.backoff.ms")) * time.Millisecond,
		LagMax:            time.Duration(num("replica.lag.time.max.ms")) * time.Millisecond,

		HWCheckpointInterval: time.Duration(num("replica.high.watermark.checkpoint.interval.ms")) * time.Millisecond,
	}
	if m, ok := b.member.(*cluster.Member); ok {
		opts.BrokerEpoch = m.BrokerEpoch
	}
	b.deleteStrayReplicas(parts)
	// The fetchers share the transaction markers' inter-broker clients:
	// kgo sends fetches on a connection of their own, so a long-polling
	// fetch holds up no marker.
	b.fetchers = parts.StartFetchers(func(snap *meta.Snapshot, id int32) (*kgo.Client, error) {
		return b.markerSender.client(snap, id)
	}, opts)
	b.watchReplication(parts, b.fetchers)
	// Every broker runs the elections; only the elected controller's act.
	ctrl := controller.New(b.cfg, b.store, b.configs, nil, b.loggers.Logger("kbroker.controller"))
	if m, ok := b.member.(*cluster.Member); ok {
		b.elections = ctrl.StartElections(m)
	}
}

// watchReplication exports the replication metrics, read at scrape time.
func (b *Broker) watchReplication(parts *replica.Partitions, fetchers *replica.Fetchers) {
	b.metrics.WatchReplication(func() metrics.ReplicationStats {
		st := parts.Stats(b.member != nil && b.member.Controller() == b.cfg.NodeID, fetchers)
		return metrics.ReplicationStats{LeaderCount: st.LeaderCount, UnderReplicated: st.UnderReplicated, UnderMinISR: st.UnderMinISR,
			AtMinISR: st.AtMinISR, Offline: st.Offline, ISRShrinks: st.ISRShrinks, ISRExpands: st.ISRExpands, MaxLag: st.MaxLag,
			ReplicationBytesOut: st.ReplicationBytesOut, ReplicationBytesIn: st.ReplicationBytesIn,
			LeaderThrottleByteRate: st.Throttles.LeaderByteRate, FollowerThrottleByteRate: st.Throttles.FollowerByteRate,
			LeaderThrottleWithheld: st.Throttles.LeaderWithheld, FollowerThrottleWithheld: st.Throttles.FollowerWithheld}
	})
}

// stopReplication stops the replica fetchers, before the logs they append
// to close.
func (b *Broker) stopReplication() {
	if b.elections != nil {
		b.elections.Close()
		b.elections = nil
	}
	if b.fetchers != nil {
		b.fetchers.Close()
		b.fetchers = nil
	}
}
