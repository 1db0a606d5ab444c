package broker

import (
	"context"
	"time"

	"kbroker/internal/metrics"
	"kbroker/internal/txn"
)

// txnStatsTimeout bounds how long a scrape waits for the coordinator's
// shards to count their ids; a busy shard is left out of that scrape
// rather than holding /metrics up.
const txnStatsTimeout = 2 * time.Second

// watchTransactions exports the transaction metrics, read at scrape time.
func (b *Broker) watchTransactions(t *txn.Coordinator) {
	b.metrics.WatchTransactions(func() metrics.TxnStats {
		ctx, cancel := context.WithTimeout(context.Background(), txnStatsTimeout)
		defer cancel()
		st := t.Stats(ctx)
		out := metrics.TxnStats{IDs: make(map[string]int, len(st.IDs)), TimedOutAborts: st.TimedOutAborts,
			DurationCount: st.Durations.Count, DurationSumSeconds: st.Durations.SumSeconds,
			DurationBuckets: make(map[float64]uint64, len(txn.DurationBuckets))}
		for state, n := range st.IDs {
			out.IDs[state.String()] = n
		}
		for i, le := range txn.DurationBuckets {
			out.DurationBuckets[le] = st.Durations.Buckets[i]
		}
		return out
	})
}
