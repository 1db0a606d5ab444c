package txn

import (
	"context"
	"sync/atomic"
	"time"
)

// DurationBuckets are the upper bounds, in seconds, of the transaction
// duration histogram: from quick stream-processing commits to
// transaction.max.timeout.ms's default of 15 minutes.
var DurationBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// Stats is what the transaction metrics report: counts taken from the
// shards when asked, counters kept as transactions end.
type Stats struct {
	// IDs counts the transactional ids this broker coordinates by state
	// (every state but Dead, zero counts included).
	IDs map[State]int
	// TimedOutAborts counts transactions the coordinator aborted because
	// they were open longer than their timeout.
	TimedOutAborts uint64
	// Durations is the histogram of transactions from their start (the
	// first partition or group added) to CompleteCommit or CompleteAbort.
	Durations DurationHistogram
}

// DurationHistogram holds the counts of DurationBuckets: Buckets[i] is
// the number of durations at most DurationBuckets[i] (cumulative, as
// Prometheus wants them).
type DurationHistogram struct {
	Count      uint64
	SumSeconds float64
	Buckets    []uint64
}

// stats are the counters the coordinator keeps for Stats; they are
// written on the shard loops and read by any goroutine.
type stats struct {
	timedOutAborts atomic.Uint64
	count          atomic.Uint64
	sumMicros      atomic.Uint64
	buckets        [16]atomic.Uint64 // len(DurationBuckets) used, +Inf is count
}

// observeTransition records what next, about to replace m, says about a
// transaction: its duration when it completes.
func (st *stats) observeTransition(m, next *txnMeta, now time.Time) {
	if (next.state != CompleteCommit && next.state != CompleteAbort) || m.start.IsZero() {
		return
	}
	d := max(now.Sub(m.start), 0)
	st.count.Add(1)
	st.sumMicros.Add(uint64(d.Microseconds()))
	secs := d.Seconds()
	for i, le := range DurationBuckets {
		if secs <= le {
			st.buckets[i].Add(1)
		}
	}
}

// observeTimedOutAbort counts m's abort past its timeout, once the fence
// and PrepareAbort were written (a failed write is tried again at the next
// check, and must not count twice).
func (st *stats) observeTimedOutAbort(m *txnMeta) {
	if m.state == PrepareAbort {
		st.timedOutAborts.Add(1)
	}
}

// Stats counts the ids of every loaded shard, each on its loop; a shard
// that does not answer before ctx ends is left out of the counts.
func (c *Coordinator) Stats(ctx context.Context) Stats {
	out := Stats{IDs: map[State]int{}, TimedOutAborts: c.stats.timedOutAborts.Load()}
	for s := Empty; s <= PrepareEpochFence; s++ {
		if s != Dead {
			out.IDs[s] = 0
		}
	}
	for _, rs := range c.rt.Shards() {
		if !rs.Loaded() {
			continue
		}
		counts, errc := runOn(ctx, rs, func(s *shard, done func(map[State]int)) {
			n := map[State]int{}
			for _, m := range s.txns {
				if m.state != Dead {
					n[m.state]++
				}
			}
			done(n)
		})
		if errc != nil {
			continue
		}
		for state, n := range counts {
			out.IDs[state] += n
		}
	}
	h := DurationHistogram{Count: c.stats.count.Load(), Buckets: make([]uint64, len(DurationBuckets))}
	h.SumSeconds = float64(c.stats.sumMicros.Load()) / 1e6
	for i := range DurationBuckets {
		h.Buckets[i] = c.stats.buckets[i].Load()
	}
	out.Durations = h
	return out
}
