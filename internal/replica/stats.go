package replica

import (
	"sync/atomic"
)

// What an operator alerts on in a replicated cluster, counted as Kafka's
// ReplicaManager, ReplicaFetcherManager and KafkaController metrics count
// it. The gauges are computed when the metrics are scraped, from the
// metadata snapshot and the fetchers' last answers, so neither produce nor
// fetch pays for them; the ISR counters are two atomic adds per change.

// Stats is the replication state of this broker at one moment.
type Stats struct {
	// LeaderCount is the partitions this broker leads (LeaderCount).
	LeaderCount int
	// UnderReplicated is the partitions it leads whose ISR is smaller than
	// their replica set (UnderReplicatedPartitions).
	UnderReplicated int
	// UnderMinISR is the partitions it leads whose ISR is smaller than
	// their min.insync.replicas: acks=all produces to them fail
	// (UnderMinIsrPartitionCount); AtMinISR those exactly at it, one
	// failure away (AtMinIsrPartitionCount).
	UnderMinISR, AtMinISR int
	// Offline is the partitions with no live leader, counted only by the
	// controller, as Kafka's OfflinePartitionsCount (-1 on other brokers:
	// the series is not reported there).
	Offline int
	// ISRShrinks and ISRExpands count the ISR changes this broker
	// committed as leader (IsrShrinksPerSec, IsrExpandsPerSec).
	ISRShrinks, ISRExpands uint64
	// MaxLag is, over the partitions this broker follows, the largest
	// number of offsets between the leader's high watermark (as of the
	// last fetch) and this replica's log end (ReplicaFetcherManager
	// MaxLag).
	MaxLag int64
	// ReplicationBytesOut is the record bytes sent to followers, and
	// ReplicationBytesIn those appended from leaders
	// (ReplicationBytesOutPerSec, ReplicationBytesInPerSec); client
	// bytes-out and quotas do not count them.
	ReplicationBytesOut, ReplicationBytesIn uint64
	// Throttles are the replication throttles' rates (throttle.go).
	Throttles ThrottleStats
}

// replicationCounters are the counters Stats reports.
type replicationCounters struct {
	isrShrinks, isrExpands atomic.Uint64
	bytesOut, bytesIn      atomic.Uint64
}

// count counts a committed ISR change from before to after members.
func (c *replicationCounters) count(before, after int) {
	if c == nil {
		return
	}
	switch {
	case after < before:
		c.isrShrinks.Add(1)
	case after > before:
		c.isrExpands.Add(1)
	}
}

// Stats is this broker's replication state now; controller says whether
// it is the controller, which alone reports offline partitions. f (nil in
// single-broker mode) gives the fetchers' lag.
func (p *Partitions) Stats(controller bool, f *Fetchers) Stats {
	snap := p.store.Snapshot()
	live := snap.LiveBrokers()
	self := p.broker.NodeID
	st := Stats{Offline: -1}
	if controller {
		st.Offline = 0
	}
	for name, t := range snap.AllTopics() {
		minISR := -1 // read once per topic, only if it leads a partition
		for i := int32(0); i < t.Partitions; i++ {
			ps := p.State(snap, t, i, live)
			if ps.Leader < 0 && controller {
				st.Offline++
			}
			if ps.Leader != self {
				continue
			}
			st.LeaderCount++
			if len(ps.ISR) < len(ps.Replicas) {
				st.UnderReplicated++
			}
			if minISR < 0 {
				minISR = min(p.MinInsyncReplicas(snap, name), len(ps.Replicas))
			}
			switch {
			case len(ps.ISR) < minISR:
				st.UnderMinISR++
			case len(ps.ISR) == minISR && len(ps.Replicas) > 1:
				st.AtMinISR++
			}
		}
	}
	st.ISRShrinks, st.ISRExpands = p.counters.isrShrinks.Load(), p.counters.isrExpands.Load()
	st.ReplicationBytesOut, st.ReplicationBytesIn = p.counters.bytesOut.Load(), p.counters.bytesIn.Load()
	st.Throttles = p.throttleStats()
	if f != nil {
		st.MaxLag = f.maxLag()
	}
	return st
}

// maxLag is the largest lag of a followed partition, as of each one's
// last fetch.
func (f *Fetchers) maxLag() int64 {
	f.mu.Lock()
	fetchers := make([]*fetcher, 0, len(f.byLeader))
	for _, ft := range f.byLeader {
		fetchers = append(fetchers, ft)
	}
	f.mu.Unlock()
	var lag int64
	for _, ft := range fetchers {
		for _, fp := range ft.partitions() {
			lag = max(lag, fp.lag.Load())
		}
	}
	return lag
}
