package main

// B2m (issue 18): one consumer fetching 1,000 partitions that each get a
// little new data, with fetch sessions (KIP-227) on and off, side by side
// with kfake:
//
//	B2m sessions      kbroker as configured by default (1000 session slots)
//	B2m no sessions   kbroker with max.incremental.fetch.session.cache.slots=0
//
// kfake runs the same way in both cases, so its "sessions ÷ no sessions"
// ratio is the noise floor of the comparison. The goals: with sessions,
// broker CPU per fetch and fetch request bytes ≤ 0.2× the same workload
// without, and a fetch rate ≥ 1.5× kfake's.

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"kbroker/bench/stats"
	"kbroker/bench/workload"
)

const (
	b2mPartitions  = 1000
	b2mRecordBytes = 100
	// b2mFetchMaxBytes holds about ten of the one-record batches, so a fetch
	// finds data in about ten partitions and none in the other 990.
	b2mFetchMaxBytes = 2000
	b2mOn            = "B2m sessions"
	b2mOff           = "B2m no sessions"
)

// b2mRounds is -b2m-rounds: records (each its own batch) per partition.
var b2mRounds = flag.Int("b2m-rounds", 20, "B2m records per partition (each its own batch); -quick: 5")

func b2mCases() []benchCase {
	spec := workload.Spec{
		Kind: workload.KindFetchMany, Partitions: b2mPartitions, RecordBytes: b2mRecordBytes,
		FetchMaxBytes: b2mFetchMaxBytes, Rounds: *b2mRounds,
		Duration: time.Minute, // not a window: the run's time budget (runTimeout)
	}
	return []benchCase{
		{b2mOn, spec, nil, nil},
		{b2mOff, spec, []string{"max.incremental.fetch.session.cache.slots=0"}, nil},
	}
}

func perFetch(v func(rr runResult) float64) func(rr, _ runResult) float64 {
	return func(rr, _ runResult) float64 {
		if rr.Result.Fetches == 0 {
			return math.NaN()
		}
		return v(rr) / float64(rr.Result.Fetches)
	}
}

var (
	b2mFetchRate   = func(rr, _ runResult) float64 { return float64(rr.Result.Fetches) / rr.Result.Seconds }
	b2mCPUPerFetch = perFetch(func(rr runResult) float64 { return rr.BrokerCPU * 1e6 })
	b2mReqBytes    = perFetch(func(rr runResult) float64 { return float64(rr.Result.FetchRequestBytes) })
	b2mRespBytes   = perFetch(func(rr runResult) float64 { return float64(rr.Result.FetchResponseBytes) })
)

// b2mMetrics are the rows of both B2m cases.
func b2mMetrics(caseID string) []metric {
	var rateGoal *goal
	if caseID == b2mOn {
		rateGoal = &goal{true, 1.5}
	}
	return []metric{
		{name: "fetches/s", value: b2mFetchRate, goal: rateGoal, fmt: "%.0f"},
		{name: "broker CPU µs per fetch", value: b2mCPUPerFetch, fmt: "%.1f"},
		{name: "fetch request bytes", value: b2mReqBytes, fmt: "%.0f"},
		{name: "fetch response bytes", value: b2mRespBytes, fmt: "%.0f"},
		{name: "k rec/s fetched", value: func(rr, _ runResult) float64 { return float64(rr.Result.Records) / rr.Result.Seconds / 1e3 }, fmt: "%.1f"},
		{name: "broker CPU (cores)", value: cores, fmt: "%.2f"},
		{name: "load CPU (cores)", value: loadCPU, fmt: "%.2f"},
		{name: "broker peak RSS (MiB)", value: rssMiB, fmt: "%.0f"},
	}
}

// b2mSessionRows compare the two cases side by side: per pair, each
// side's value with sessions over its value without. The goal is held by
// side a's median (kbroker); side b (kfake, unchanged between the cases)
// shows how much the comparison moves by itself.
func b2mSessionRows(res results, pc planConfig) []summaryRow {
	on, off := false, false
	for _, c := range selected(pc) {
		on, off = on || c.ID == b2mOn, off || c.ID == b2mOff
	}
	if !on || !off {
		return nil
	}
	var rows []summaryRow
	for _, m := range []metric{
		{name: "broker CPU µs per fetch", value: b2mCPUPerFetch, goal: &goal{false, 0.2}},
		{name: "fetch request bytes", value: b2mReqBytes, goal: &goal{false, 0.2}},
		{name: "fetch response bytes", value: b2mRespBytes},
		{name: "fetches/s", value: b2mFetchRate},
	} {
		side := func(s string) (float64, int) {
			return stats.RatioMedian(perPair(res, b2mOn, s, m, pc.pairs), perPair(res, b2mOff, s, m, pc.pairs))
		}
		a, n := side("a")
		b, _ := side("b")
		row := summaryRow{Case: "B2m sessions ÷ no sessions", Metric: m.name + " (each side's own ratio)",
			A: a, B: b, Ratio: math.NaN(), Pairs: n, format: "%.2f"}
		if m.goal != nil {
			row.Goal = m.goal.String() + " (a)"
			if !math.IsNaN(a) {
				met := m.goal.met(a)
				row.Met = &met
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// b2mSizing is the report's line on how B2m ran, or "" if not selected.
func b2mSizing(pc planConfig) string {
	for _, c := range selected(pc) {
		if strings.HasPrefix(c.ID, "B2m") {
			return fmt.Sprintf("- B2m: %d partitions × %d records of %d B, each record its own batch (written before the window); "+
				"one kgo consumer from offset 0 with FetchMaxBytes = FetchMaxPartitionBytes = %d B (about ten batches per fetch); "+
				"requests counted and sized by a kgo broker-write hook; \"no sessions\" sets max.incremental.fetch.session.cache.slots=0 on kbroker only\n",
				b2mPartitions, *b2mRounds, b2mRecordBytes, b2mFetchMaxBytes)
		}
	}
	return ""
}
