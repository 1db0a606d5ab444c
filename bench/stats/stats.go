// Package stats holds the small amount of arithmetic the benchmark report
// needs: percentiles of latency samples and medians of paired ratios.
//
// Results on a shared 2-core box drift by ±30 % between runs, so the report
// compares sides only through ratios taken within one A-B pair and then
// summarised by their median, which one bad pair cannot move far.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the q-quantile (0 ≤ q ≤ 1) of samples using the
// nearest-rank method: the smallest sample with at least q of all samples at
// or below it. Nearest-rank never invents a value that was not observed,
// which matters for tail latencies read off a few thousand samples. It sorts
// samples in place and returns NaN when there are none.
func Percentile(samples []float64, q float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	slices.Sort(samples)
	return percentileSorted(samples, q)
}

// Percentiles is Percentile for several quantiles with a single sort.
func Percentiles(samples []float64, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	if len(samples) == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	slices.Sort(samples)
	for i, q := range qs {
		out[i] = percentileSorted(samples, q)
	}
	return out
}

func percentileSorted(sorted []float64, q float64) float64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median returns the median of the finite values in xs (the mean of the two
// middle values for an even count), ignoring NaN so that a failed run does
// not poison the summary. It returns NaN when no finite value remains. xs is
// not modified.
func Median(xs []float64) float64 {
	vals := finite(xs)
	if len(vals) == 0 {
		return math.NaN()
	}
	slices.Sort(vals)
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

// RatioMedian returns the median over pairs i of a[i] / b[i]. Pairs where
// either side is missing (NaN) or b[i] is zero are skipped, because a ratio
// is only meaningful when both runs of the pair succeeded. The second result
// is how many pairs contributed.
func RatioMedian(a, b []float64) (float64, int) {
	n := min(len(a), len(b))
	ratios := make([]float64, 0, n)
	for i := range n {
		if isFinite(a[i]) && isFinite(b[i]) && b[i] != 0 {
			ratios = append(ratios, a[i]/b[i])
		}
	}
	return Median(ratios), len(ratios)
}

func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if isFinite(x) {
			out = append(out, x)
		}
	}
	return out
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Event is something counted at an instant: n bytes acknowledged, one
// connection answered, one partition created. At is measured from the start
// of the run.
type Event struct {
	At time.Duration
	N  float64
}

// WindowSum adds up N over the events with from ≤ At < to.
func WindowSum(events []Event, from, to time.Duration) float64 {
	sum := 0.0
	for _, e := range events {
		if e.At >= from && e.At < to {
			sum += e.N
		}
	}
	return sum
}

// SpanRate is the rate of the events with from ≤ At < to, measured between
// the first and the last of them: the N of every event after the first,
// divided by the time from the first to the last. Counting from one event
// to another (rather than over the fixed window) removes the quantisation
// a fixed window has when events are few and periodic, e.g. one 1 MiB
// request per second against a 1 MiB/s quota, where a 15 s window holds
// either 15 or 16 of them. events must be sorted by At. It returns NaN and
// the number of events used when fewer than two fall in the window.
func SpanRate(events []Event, from, to time.Duration) (float64, int) {
	first, last := -1, -1
	sum := 0.0
	for i, e := range events {
		if e.At < from || e.At >= to {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		sum += e.N
		last = i
	}
	if last < 0 {
		if first < 0 {
			return math.NaN(), 0
		}
		return math.NaN(), 1
	}
	span := events[last].At - events[first].At
	if span <= 0 {
		return math.NaN(), last - first + 1
	}
	return sum / span.Seconds(), last - first + 1
}
