package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"kbroker/bench/broker"
	"kbroker/bench/stats"
)

// metric is one row of the report: how to read a value off a run, and the
// goal its a÷b ratio is held to, if any.
type metric struct {
	name  string
	value func(rr, loopback runResult) float64 // NaN when not applicable
	goal  *goal
	// goalOnA holds side a's median itself to goal, not the a÷b ratio:
	// for a metric that is already a ratio within one broker (T2's
	// read_committed ÷ read_uncommitted).
	goalOnA bool
	fmt     string
}

// goal is a bound on the median a÷b ratio.
type goal struct {
	atLeast bool // true: ratio ≥ x; false: ratio ≤ x
	x       float64
}

func (g goal) String() string {
	if g.atLeast {
		return fmt.Sprintf("≥ %.1f", g.x)
	}
	return fmt.Sprintf("≤ %.1f", g.x)
}

func (g goal) met(ratio float64) bool {
	if g.atLeast {
		return ratio >= g.x
	}
	return ratio <= g.x
}

func mbps(rr, _ runResult) float64 {
	return float64(rr.Result.Bytes) / rr.Result.Seconds / 1e6
}

func cores(rr, _ runResult) float64   { return rr.BrokerCPU / rr.Result.Seconds }
func loadCPU(rr, _ runResult) float64 { return rr.LoadCPU / rr.Result.Seconds }
func rssMiB(rr, _ runResult) float64  { return float64(rr.PeakRSS) / (1 << 20) }

// mbPerCPU is payload per broker CPU-second: the per-core efficiency, which
// unlike raw MB/s does not depend on how much CPU the client left over.
func mbPerCPU(rr, _ runResult) float64 {
	return float64(rr.Result.Bytes) / 1e6 / rr.BrokerCPU
}

// metricsFor lists the rows of each case. Goals are the ones set for the
// project: B1 and B2 at least 1.5× kfake's MB/s, B3 p99 no worse than kfake.
func metricsFor(caseID string) []metric {
	common := []metric{
		{name: "broker CPU (cores)", value: cores, fmt: "%.2f"},
		{name: "MB per broker CPU-s", value: mbPerCPU, fmt: "%.0f"},
		{name: "load CPU (cores)", value: loadCPU, fmt: "%.2f"},
		{name: "broker peak RSS (MiB)", value: rssMiB, fmt: "%.0f"},
	}
	produced := func(g *goal) []metric {
		return append([]metric{
			{name: "MB/s acked", value: mbps, goal: g, fmt: "%.1f"},
			{name: "k rec/s acked", value: func(rr, _ runResult) float64 {
				return float64(rr.Result.Records) / rr.Result.Seconds / 1e3
			}, fmt: "%.1f"},
		}, common...)
	}
	switch {
	case strings.HasPrefix(caseID, "G"):
		return groupMetrics(caseID) // groups.go
	case strings.HasPrefix(caseID, "T"):
		return txnMetrics(caseID) // txns.go
	case strings.HasPrefix(caseID, "B1i"): // no goal: not in the plan
		return produced(nil)
	case strings.HasPrefix(caseID, "B1"):
		return produced(&goal{true, 1.5})
	case strings.HasPrefix(caseID, "B2m"):
		return b2mMetrics(caseID) // b2m.go
	case strings.HasPrefix(caseID, "B2"):
		return append([]metric{
			{name: "MB/s fetched", value: mbps, goal: &goal{true, 1.5}, fmt: "%.1f"},
			{name: "fraction of loopback stream", value: func(rr, lb runResult) float64 {
				return float64(rr.Result.Bytes) / rr.Result.Seconds / lb.Result.StreamBytesPerSec
			}, fmt: "%.3f"},
			{name: "preload s (not measured)", value: func(rr, _ runResult) float64 { return rr.Result.PreloadSeconds }, fmt: "%.1f"},
		}, common...)
	case strings.HasPrefix(caseID, "B3"):
		return []metric{
			{name: "p50 µs", value: func(rr, _ runResult) float64 { return rr.Result.P50us }, fmt: "%.0f"},
			{name: "p99 µs", value: func(rr, _ runResult) float64 { return rr.Result.P99us }, goal: &goal{false, 1.0}, fmt: "%.0f"},
			{name: "p99.9 µs", value: func(rr, _ runResult) float64 { return rr.Result.P999us }, fmt: "%.0f"},
			{name: "produces/s", value: func(rr, _ runResult) float64 {
				return float64(rr.Result.Records) / rr.Result.Seconds
			}, fmt: "%.0f"},
			{name: "p50 ÷ loopback RTT", value: func(rr, lb runResult) float64 { return rr.Result.P50us / lb.Result.RTTp50us }, fmt: "%.1f"},
			{name: "broker CPU (cores)", value: cores, fmt: "%.2f"},
			{name: "broker peak RSS (MiB)", value: rssMiB, fmt: "%.0f"},
		}
	}
	return nil
}

// summaryRow is one reported metric with its medians and ratio.
type summaryRow struct {
	Case, Metric string
	A, B, Ratio  float64
	Pairs        int
	Goal         string `json:",omitempty"`
	Met          *bool  `json:",omitempty"`
	format       string
}

// summarize turns per-run results into medians per side and the median of
// per-pair ratios.
func summarize(res results, pc planConfig) []summaryRow {
	pairs := pc.pairs
	var rows []summaryRow
	for _, c := range selected(pc) {
		for _, m := range metricsFor(c.ID) {
			a, b := perPair(res, c.ID, "a", m, pairs), perPair(res, c.ID, "b", m, pairs)
			ratio, n := stats.RatioMedian(a, b)
			row := summaryRow{Case: c.ID, Metric: m.name, A: stats.Median(a), B: stats.Median(b),
				Ratio: ratio, Pairs: n, format: m.fmt}
			if m.goal != nil {
				row.Goal = m.goal.String()
				held := ratio
				if m.goalOnA {
					row.Goal, held = "a "+row.Goal, row.A
				}
				if !math.IsNaN(held) {
					met := m.goal.met(held)
					row.Met = &met
				}
			}
			rows = append(rows, row)
		}
	}
	return append(rows, b2mSessionRows(res, pc)...) // b2m.go
}

// perPair returns the metric per pair for one side, NaN where the run (or
// the pair's loopback run) failed.
func perPair(res results, caseID, side string, m metric, pairs int) []float64 {
	out := make([]float64, pairs)
	for i := range out {
		out[i] = math.NaN()
	}
	for _, rr := range res.Runs {
		if rr.Case != caseID || rr.Side != side || rr.Err != "" || rr.Pair >= pairs || rr.Result.Seconds <= 0 {
			continue
		}
		var lb runResult
		if rr.Pair < len(res.Loopback) && res.Loopback[rr.Pair].Err == "" {
			lb = res.Loopback[rr.Pair]
		} else {
			lb.Result.StreamBytesPerSec, lb.Result.RTTp50us = math.NaN(), math.NaN()
		}
		out[rr.Pair] = m.value(rr, lb)
	}
	return out
}

func loopbackMedians(res results) (gbps, rttus float64) {
	var s, r []float64
	for _, lb := range res.Loopback {
		if lb.Err == "" {
			s = append(s, lb.Result.StreamBytesPerSec/1e9)
			r = append(r, lb.Result.RTTp50us)
		}
	}
	return stats.Median(s), stats.Median(r)
}

// writeMarkdown prints the report in a form meant to be pasted into
// BENCHMARKS.md as is.
func writeMarkdown(w io.Writer, m machine, cmdline string, a, b broker.Kind, pc planConfig, res results, rows []summaryRow, took time.Duration) {
	fmt.Fprintf(w, "### kbench run, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- Command: `%s` (took %s)\n", cmdline, took.Round(time.Second))
	fmt.Fprintf(w, "- Machine: %d CPUs, %s, %s RAM, Linux %s, %s\n", m.NumCPU, m.CPUModel, m.MemTotal, m.Kernel, m.Go)
	fmt.Fprintf(w, "- Tree: %s\n", m.Tree)
	if m.GuestPages != "" {
		fmt.Fprintf(w, "- Guest memory: %s\n", m.GuestPages)
	}
	fmt.Fprintf(w, "- Sides: **a = %s**, **b = %s**; %d pairs, order alternating A-B / B-A; each run on a fresh broker process\n", a, b, pc.pairs)
	fmt.Fprintf(w, "- Sizing: B1 %s per run after %s warm-up; B2 preload %d MiB, FetchMaxBytes %d MiB; B3 %s; MB = 10^6 bytes of record value\n",
		pc.produceDur, pc.warmup, pc.preloadBytes>>20, pc.fetchMax>>20, pc.latencyDur)
	fmt.Fprint(w, groupSizing(pc)) // groups.go
	fmt.Fprint(w, txnSizing(pc))   // txns.go
	fmt.Fprint(w, b2mSizing(pc))   // b2m.go
	gbps, rtt := loopbackMedians(res)
	fmt.Fprintf(w, "- Loopback floors (median of %d): single-stream TCP %.2f GB/s (1 MiB writes), 64 B ping-pong RTT p50 %.1f µs\n\n", len(res.Loopback), gbps, rtt)

	fmt.Fprintf(w, "| bench | metric | a: %s (median) | b: %s (median) | a ÷ b (median of pair ratios) | pairs | goal |\n", a, b)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---|")
	for _, r := range rows {
		goalText := ""
		if r.Goal != "" {
			switch {
			case r.Met == nil:
				goalText = r.Goal + " — no data"
			case *r.Met:
				goalText = r.Goal + " — **met**"
			default:
				goalText = r.Goal + " — **not met**"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %s |\n", r.Case, r.Metric,
			num(r.format, r.A), num(r.format, r.B), num("%.2f", r.Ratio), r.Pairs, goalText)
	}

	var failed []runResult
	for _, rr := range append(append([]runResult{}, res.Loopback...), res.Runs...) {
		if rr.Err != "" {
			failed = append(failed, rr)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n**%d failed runs** (excluded from medians):\n\n", len(failed))
		for _, rr := range failed {
			msg := rr.Err
			if len(msg) > 400 {
				msg = msg[:400] + "…"
			}
			fmt.Fprintf(w, "- pair %d, %s, side %s (%s): `%s`\n", rr.Pair+1, rr.Case, rr.Side, rr.Kind,
				strings.ReplaceAll(strings.ReplaceAll(msg, "\n", " ⏎ "), "`", "'"))
		}
	}
	var errored []runResult
	for _, rr := range res.Runs {
		if rr.Err == "" && rr.Result.Errors > 0 {
			errored = append(errored, rr)
		}
	}
	if len(errored) > 0 {
		fmt.Fprintf(w, "\n**Runs with failed records inside the window** (counted runs; failed records not counted):\n\n")
		for _, rr := range errored {
			fmt.Fprintf(w, "- pair %d, %s, side %s (%s): %d failed, first: `%s`\n", rr.Pair+1, rr.Case, rr.Side, rr.Kind,
				rr.Result.Errors, rr.Result.FirstErr)
		}
	}
}

func num(format string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf(format, x)
}
