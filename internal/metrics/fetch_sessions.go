package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// FetchSessions is what the fetch session cache (KIP-227) holds.
type FetchSessions struct {
	Sessions, Partitions int
	Evictions            uint64
	Incremental          uint64 // incremental fetches served
}

// WatchFetchSessions exports the fetch session cache as Kafka's
// kafka.server:type=FetchSessionCache metrics (NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictionsPerSec
// as a counter), plus the incremental fetches served, which shows clients
// reusing their sessions. read is called at scrape time, so fetches pay
// nothing for them. A later call replaces the earlier source.
func (m *Broker) WatchFetchSessions(read func() FetchSessions) {
	m.fetchSessions.Store(&read)
}

var (
	fetchSessionsDesc = prometheus.NewDesc("kbroker_fetch_sessions",
		"Incremental fetch sessions cached (KIP-227; Kafka's NumIncrementalFetchSessions).", nil, nil)
	fetchSessionPartitionsDesc = prometheus.NewDesc("kbroker_fetch_session_partitions",
		"Partitions in all cached fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).", nil, nil)
	fetchSessionEvictionsDesc = prometheus.NewDesc("kbroker_fetch_session_evictions_total",
		"Fetch sessions evicted to make room for new ones (Kafka's IncrementalFetchSessionEvictionsPerSec).", nil, nil)
	fetchSessionIncrementalDesc = prometheus.NewDesc("kbroker_fetch_session_incremental_fetches_total",
		"Incremental fetches served from a cached session.", nil, nil)
)

// fetchSessionCollector reads the source WatchFetchSessions last set; none,
// no series.
type fetchSessionCollector struct {
	read *atomic.Pointer[func() FetchSessions]
}

func (c fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fetchSessionsDesc
	ch <- fetchSessionPartitionsDesc
	ch <- fetchSessionEvictionsDesc
	ch <- fetchSessionIncrementalDesc
}

func (c fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	st := (*read)()
	ch <- prometheus.MustNewConstMetric(fetchSessionsDesc, prometheus.GaugeValue, float64(st.Sessions))
	ch <- prometheus.MustNewConstMetric(fetchSessionPartitionsDesc, prometheus.GaugeValue, float64(st.Partitions))
	ch <- prometheus.MustNewConstMetric(fetchSessionEvictionsDesc, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(fetchSessionIncrementalDesc, prometheus.CounterValue, float64(st.Incremental))
}
