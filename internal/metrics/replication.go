package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ReplicationStats is what the replication series report, taken at scrape
// time from the broker's partitions (internal/replica Stats).
type ReplicationStats struct {
	LeaderCount, UnderReplicated, UnderMinISR, AtMinISR int
	// Offline is negative on a broker that is not the controller: only
	// the controller reports offline partitions, as in Kafka.
	Offline                                 int
	ISRShrinks, ISRExpands                  uint64
	MaxLag                                  int64
	ReplicationBytesOut, ReplicationBytesIn uint64
	// The replication throttles: each side's byte rate of its throttled
	// partitions, and the partition reads it withheld while over its rate.
	LeaderThrottleByteRate, FollowerThrottleByteRate float64
	LeaderThrottleWithheld, FollowerThrottleWithheld uint64
}

// WatchReplication exports the replication series read returns, as
// Kafka's kafka.server:type=ReplicaManager (LeaderCount,
// UnderReplicatedPartitions, UnderMinIsrPartitionCount,
// AtMinIsrPartitionCount, IsrShrinksPerSec, IsrExpandsPerSec),
// kafka.server:type=ReplicaFetcherManager,name=MaxLag,
// kafka.controller:type=KafkaController,name=OfflinePartitionsCount and
// kafka.server:type=BrokerTopicMetrics (ReplicationBytesOutPerSec,
// ReplicationBytesInPerSec) metrics, and the replication throttles'
// byte rates as Kafka's LeaderReplication and FollowerReplication
// byte-rate; Kafka's per-second meters are
// counters here, for rate(). read runs at scrape time. A later call
// replaces the earlier source.
func (m *Broker) WatchReplication(read func() ReplicationStats) {
	m.replication.Store(&read)
}

var (
	leaderCountDesc = prometheus.NewDesc("kbroker_replica_leader_partitions",
		"Partitions this broker leads (Kafka's ReplicaManager LeaderCount).", nil, nil)
	underReplicatedDesc = prometheus.NewDesc("kbroker_replica_under_replicated_partitions",
		"Partitions this broker leads whose in-sync replicas are fewer than their replicas (Kafka's UnderReplicatedPartitions): alert when above 0 for long.", nil, nil)
	underMinISRDesc = prometheus.NewDesc("kbroker_replica_under_min_isr_partitions",
		"Partitions this broker leads with fewer in-sync replicas than min.insync.replicas: acks=all produces to them fail with NOT_ENOUGH_REPLICAS (Kafka's UnderMinIsrPartitionCount).", nil, nil)
	atMinISRDesc = prometheus.NewDesc("kbroker_replica_at_min_isr_partitions",
		"Replicated partitions this broker leads with exactly min.insync.replicas in-sync replicas: one more loss stops acks=all produces (Kafka's AtMinIsrPartitionCount).", nil, nil)
	offlineDesc = prometheus.NewDesc("kbroker_controller_offline_partitions",
		"Partitions with no live leader, reported by the controller only (Kafka's OfflinePartitionsCount): their data cannot be read or written.", nil, nil)
	isrShrinksDesc = prometheus.NewDesc("kbroker_replica_isr_shrinks_total",
		"ISR shrinks this broker committed as leader (Kafka's IsrShrinksPerSec).", nil, nil)
	isrExpandsDesc = prometheus.NewDesc("kbroker_replica_isr_expands_total",
		"ISR expansions this broker committed as leader (Kafka's IsrExpandsPerSec).", nil, nil)
	maxLagDesc = prometheus.NewDesc("kbroker_replica_fetcher_max_lag",
		"Largest lag in offsets, over the partitions this broker follows, between the leader's high watermark and this replica's log end (Kafka's ReplicaFetcherManager MaxLag).", nil, nil)
	replicationBytesOutDesc = prometheus.NewDesc("kbroker_replication_bytes_out_total",
		"Record bytes sent to followers (Kafka's ReplicationBytesOutPerSec); not in kbroker_topic_bytes_out_total nor charged to client quotas.", nil, nil)
	replicationBytesInDesc = prometheus.NewDesc("kbroker_replication_bytes_in_total",
		"Record bytes appended from leaders by this broker's replica fetchers (Kafka's ReplicationBytesInPerSec).", nil, nil)
	throttleByteRateDesc = prometheus.NewDesc("kbroker_replication_throttle_byte_rate",
		"Bytes per second of the partitions the replication throttles name, on the leader's side (type=\"LeaderReplication\": sent, against leader.replication.throttled.rate) and the follower's (type=\"FollowerReplication\": fetched, against follower.replication.throttled.rate), as Kafka's byte-rate of those types.", []string{"type"}, nil)
	throttleWithheldDesc = prometheus.NewDesc("kbroker_replication_throttle_withheld_total",
		"Partition reads of replicas out of the ISR that a replication throttle left out while over its rate (type as kbroker_replication_throttle_byte_rate): above 0 and growing, a throttle is slowing a reassignment or a catch-up.", []string{"type"}, nil)
	replicationDescs = []*prometheus.Desc{leaderCountDesc, underReplicatedDesc, underMinISRDesc, atMinISRDesc, offlineDesc,
		isrShrinksDesc, isrExpandsDesc, maxLagDesc, replicationBytesOutDesc, replicationBytesInDesc, throttleByteRateDesc, throttleWithheldDesc}
)

// replicationCollector reads the source WatchReplication last set; none,
// no series.
type replicationCollector struct {
	read *atomic.Pointer[func() ReplicationStats]
}

func (c replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range replicationDescs {
		ch <- d
	}
}

func (c replicationCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	st := (*read)()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(leaderCountDesc, float64(st.LeaderCount))
	gauge(underReplicatedDesc, float64(st.UnderReplicated))
	gauge(underMinISRDesc, float64(st.UnderMinISR))
	gauge(atMinISRDesc, float64(st.AtMinISR))
	if st.Offline >= 0 {
		gauge(offlineDesc, float64(st.Offline))
	}
	counter(isrShrinksDesc, st.ISRShrinks)
	counter(isrExpandsDesc, st.ISRExpands)
	gauge(maxLagDesc, float64(st.MaxLag))
	counter(replicationBytesOutDesc, st.ReplicationBytesOut)
	counter(replicationBytesInDesc, st.ReplicationBytesIn)
	for _, side := range []struct {
		name     string
		rate     float64
		withheld uint64
	}{{"LeaderReplication", st.LeaderThrottleByteRate, st.LeaderThrottleWithheld}, {"FollowerReplication", st.FollowerThrottleByteRate, st.FollowerThrottleWithheld}} {
		ch <- prometheus.MustNewConstMetric(throttleByteRateDesc, prometheus.GaugeValue, side.rate, side.name)
		ch <- prometheus.MustNewConstMetric(throttleWithheldDesc, prometheus.CounterValue, float64(side.withheld), side.name)
	}
}
