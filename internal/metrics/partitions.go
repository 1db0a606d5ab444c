package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// PartitionLog is what the per-partition series report of one log.
type PartitionLog struct {
	Topic       string
	Partition   int32
	Size        int64 // bytes in its segments
	StartOffset int64
	EndOffset   int64
	// LastStableOffset is where read_committed consumers stop: the first
	// offset of the earliest open transaction, else the high watermark.
	LastStableOffset int64
}

// PartitionLogs lists the logs open on this broker, calling yield for each.
type PartitionLogs func(yield func(PartitionLog))

// WatchPartitions exports the size, log start offset and log end offset of
// every partition logs lists, as Kafka's kafka.log:type=Log metrics
// (Size, LogStartOffset, LogEndOffset), and the LSO lag: the log end offset
// minus the last stable offset, which grows while a transaction stays open
// (a hanging transaction holds read_committed consumers back by that many
// offsets) and is 0 on a partition with no open transaction whose high
// watermark is at the log end. They are read when /metrics is
// scraped, not kept up to date on every append, so the produce path pays
// nothing for them; and a deleted topic's series go with its logs, as
// ForgetTopic drops the per-topic ones.
// A later call replaces the earlier list (a broker started again).
func (m *Broker) WatchPartitions(logs PartitionLogs) {
	m.partitionLogs.Store(&logs)
}

var (
	partitionLabels   = []string{"topic", "partition"}
	logSizeDesc       = prometheus.NewDesc("kbroker_log_size_bytes", "Bytes in a partition's log segments.", partitionLabels, nil)
	logStartDesc      = prometheus.NewDesc("kbroker_log_start_offset", "A partition's log start offset: the first offset still readable.", partitionLabels, nil)
	logEndOffsetDesc  = prometheus.NewDesc("kbroker_log_end_offset", "A partition's log end offset: the offset the next record appended gets.", partitionLabels, nil)
	lsoLagDesc        = prometheus.NewDesc("kbroker_log_lso_lag", "A partition's log end offset minus its last stable offset: how far read_committed consumers are held back by open transactions (and uncommitted records).", partitionLabels, nil)
	partitionLogDescs = []*prometheus.Desc{logSizeDesc, logStartDesc, logEndOffsetDesc, lsoLagDesc}
)

// partitionCollector reads the list WatchPartitions last set; none, no series.
type partitionCollector struct {
	logs *atomic.Pointer[PartitionLogs]
}

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range partitionLogDescs {
		ch <- d
	}
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	logs := c.logs.Load()
	if logs == nil {
		return
	}
	(*logs)(func(p PartitionLog) {
		part := strconv.Itoa(int(p.Partition))
		ch <- prometheus.MustNewConstMetric(logSizeDesc, prometheus.GaugeValue, float64(p.Size), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(logStartDesc, prometheus.GaugeValue, float64(p.StartOffset), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(logEndOffsetDesc, prometheus.GaugeValue, float64(p.EndOffset), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(lsoLagDesc, prometheus.GaugeValue, float64(max(p.EndOffset-p.LastStableOffset, 0)), p.Topic, part)
	})
}
