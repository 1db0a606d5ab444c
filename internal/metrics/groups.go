package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupStats is what the group series report, taken at scrape time from
// the groups this broker coordinates.
type GroupStats struct {
	Groups     []GroupCount
	Offsets    []GroupOffset // in the order the lag cap keeps them
	Rebalances uint64
	// CommitsOK and CommitsFailed count offset commits per partition.
	CommitsOK, CommitsFailed uint64
}

// GroupCount is how many groups of one type are in one state.
type GroupCount struct {
	State, Type string
	Groups      int
}

// GroupOffset is a group's committed offset for one partition.
type GroupOffset struct {
	Group, Topic string
	Partition    int32
	Committed    int64
}

// GroupSource is how the group series are read at scrape time.
type GroupSource struct {
	Stats func() GroupStats
	// HighWatermark is a partition's high watermark, if its log is on
	// this broker.
	HighWatermark func(topic string, partition int32) (int64, bool)
	// MaxLagSeries caps the kbroker_group_lag series of one scrape
	// (kbroker.metrics.group.lag.max.series).
	MaxLagSeries int
}

// WatchGroups exports consumer lag, groups by state, rebalances and offset
// commits of the groups src reports. Like the partition series they are
// computed when /metrics is scraped: a commit costs nothing more, and a
// deleted group's series are gone from the next scrape. A later call
// replaces the earlier source (a broker started again).
func (m *Broker) WatchGroups(src GroupSource) {
	m.groups.Store(&src)
}

var (
	groupLagDesc = prometheus.NewDesc("kbroker_group_lag",
		"Records a consumer group has yet to commit on a partition: the partition's high watermark minus the group's committed offset (0 once caught up), for groups this broker coordinates and partitions whose log is on it.",
		[]string{"group", "topic", "partition"}, nil)
	groupLagDroppedDesc = prometheus.NewDesc("kbroker_group_lag_series_dropped",
		"kbroker_group_lag series left out of this scrape by kbroker.metrics.group.lag.max.series.", nil, nil)
	groupsDesc = prometheus.NewDesc("kbroker_groups",
		"Groups this broker coordinates, by state and type.", []string{"state", "type"}, nil)
	groupRebalancesDesc = prometheus.NewDesc("kbroker_group_rebalances_total",
		"Rebalances completed by the groups this broker coordinates (each a new generation).", nil, nil)
	offsetCommitsDesc = prometheus.NewDesc("kbroker_offset_commits_total",
		"Partitions of OffsetCommit requests the group coordinator answered, by result (ok, error).", []string{"result"}, nil)
	groupDescs = []*prometheus.Desc{groupLagDesc, groupLagDroppedDesc, groupsDesc, groupRebalancesDesc, offsetCommitsDesc}
)

// groupCollector reads the source WatchGroups last set; none, no series.
type groupCollector struct {
	src *atomic.Pointer[GroupSource]
}

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range groupDescs {
		ch <- d
	}
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.src.Load()
	if src == nil {
		return
	}
	st := src.Stats()
	for _, g := range st.Groups {
		ch <- prometheus.MustNewConstMetric(groupsDesc, prometheus.GaugeValue, float64(g.Groups), g.State, g.Type)
	}
	ch <- prometheus.MustNewConstMetric(groupRebalancesDesc, prometheus.CounterValue, float64(st.Rebalances))
	ch <- prometheus.MustNewConstMetric(offsetCommitsDesc, prometheus.CounterValue, float64(st.CommitsOK), "ok")
	ch <- prometheus.MustNewConstMetric(offsetCommitsDesc, prometheus.CounterValue, float64(st.CommitsFailed), "error")
	exported, dropped := 0, 0
	for _, o := range st.Offsets {
		hw, ok := src.HighWatermark(o.Topic, o.Partition)
		if !ok {
			continue // the partition's log is on another broker
		}
		if exported >= src.MaxLagSeries {
			dropped++
			continue
		}
		exported++
		ch <- prometheus.MustNewConstMetric(groupLagDesc, prometheus.GaugeValue, float64(lag(o.Committed, hw)),
			o.Group, o.Topic, strconv.Itoa(int(o.Partition)))
	}
	ch <- prometheus.MustNewConstMetric(groupLagDroppedDesc, prometheus.GaugeValue, float64(dropped))
}

// lag is how far committed is behind the high watermark, never negative: a
// commit ahead of it (the log was recreated below the group's position)
// reads as 0, and a negative commit (no position) counts from offset 0.
func lag(committed, highWatermark int64) int64 {
	if committed < 0 {
		committed = 0
	}
	return max(highWatermark-committed, 0)
}
