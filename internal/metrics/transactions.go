package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// TxnStats is what the transaction series report, taken at scrape time
// from the transaction coordinator.
type TxnStats struct {
	// IDs counts transactional ids by state name.
	IDs map[string]int
	// TimedOutAborts counts transactions aborted past their timeout.
	TimedOutAborts uint64
	// Durations: begin (first partition or group added) to Complete*.
	DurationCount      uint64
	DurationSumSeconds float64
	// DurationBuckets maps each upper bound in seconds to the cumulative
	// count of durations at most that long.
	DurationBuckets map[float64]uint64
}

// WatchTransactions exports the series of the transactions stats reports,
// read when /metrics is scraped (a transaction costs a few atomic adds
// when it ends, nothing more). A later call replaces the earlier source.
func (m *Broker) WatchTransactions(stats func() TxnStats) {
	m.txns.Store(&stats)
}

var (
	txnsDesc = prometheus.NewDesc("kbroker_transactions",
		"Transactional ids this broker coordinates, by state: Ongoing are transactions open, PrepareCommit/PrepareAbort those whose markers are being written, Empty/CompleteCommit/CompleteAbort ids with none open.",
		[]string{"state"}, nil)
	txnDurationDesc = prometheus.NewDesc("kbroker_transaction_duration_seconds",
		"Transactions coordinated here, from their start (the first partition or group added) to CompleteCommit or CompleteAbort (every marker written).",
		nil, nil)
	txnTimedOutDesc = prometheus.NewDesc("kbroker_transactions_timed_out_total",
		"Transactions the coordinator aborted because they stayed open longer than their timeout (transaction.timeout.ms of the producer); their producer is fenced.",
		nil, nil)
	txnDescs = []*prometheus.Desc{txnsDesc, txnDurationDesc, txnTimedOutDesc}
)

// txnCollector reads the source WatchTransactions last set; none, no series.
type txnCollector struct {
	src *atomic.Pointer[func() TxnStats]
}

func (c txnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range txnDescs {
		ch <- d
	}
}

func (c txnCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.src.Load()
	if src == nil {
		return
	}
	st := (*src)()
	for state, n := range st.IDs {
		ch <- prometheus.MustNewConstMetric(txnsDesc, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstHistogram(txnDurationDesc, st.DurationCount, st.DurationSumSeconds, st.DurationBuckets)
	ch <- prometheus.MustNewConstMetric(txnTimedOutDesc, prometheus.CounterValue, float64(st.TimedOutAborts))
}
