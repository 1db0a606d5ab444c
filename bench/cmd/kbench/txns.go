package main

// The transaction cases of the throughput suite (issue 16), side by side
// with kfake like B1–B3:
//
//	T1 txn produce       transactions of 100 × 1 KiB records to 2 partitions, committed back to back
//	T2 txn fetch         a preloaded log with every 10th transaction aborted, read
//	                     with read_committed and with read_uncommitted
//	T3 txn commit latency EndTxn(commit) of transactions of 2 × 1 KiB records (one per partition)
//
// Every transaction is franz-go's (BeginTransaction … EndTransaction), with
// the B1 producer's linger 0 and no compression, and acks=all with
// idempotence, which transactions require.

import (
	"fmt"
	"math"
	"os"
	"strings"

	"kbroker/bench/workload"
)

// Shapes of the T cases, from the plan.
const (
	txnRecordsT1  = 100 // records per transaction, T1 and T2
	txnRecordsT3  = 2   // one per partition: EndTxn writes two markers
	txnPartitions = 2   // T1, T3
	txnAbortEvery = 10  // T2: 10 % of the transactions are aborted
)

func txnCases(pc planConfig) []benchCase {
	return []benchCase{
		{"T1 txn produce", workload.Spec{
			Kind: workload.KindTxnProduce, RecordBytes: 1024, TxnRecords: txnRecordsT1, Partitions: txnPartitions,
			Warmup: pc.warmup, Duration: pc.produceDur,
		}, nil, nil},
		{"T2 txn fetch", workload.Spec{
			Kind: workload.KindTxnFetch, RecordBytes: 1024, TxnRecords: txnRecordsT1, AbortEvery: txnAbortEvery,
			PreloadBytes: pc.preloadBytes, FetchMaxBytes: pc.fetchMax,
		}, nil, nil},
		{"T3 txn commit latency", workload.Spec{
			Kind: workload.KindTxnCommitLatency, RecordBytes: 1024, TxnRecords: txnRecordsT3, Partitions: txnPartitions,
			Warmup: pc.warmup / 2, Duration: pc.latencyDur,
		}, nil, nil},
	}
}

// txnMetrics are the report rows of the T cases. Goals (issue 16): T1 ≥
// 1.5× kfake's records/s; T2 read_committed ≥ 1.5× kfake's and ≥ 0.9× the
// same broker's read_uncommitted; T3 p99 ≤ kfake's.
func txnMetrics(caseID string) []metric {
	cpuRSS := []metric{
		{name: "broker CPU (cores)", value: cores, fmt: "%.2f"},
		{name: "load CPU (cores)", value: loadCPU, fmt: "%.2f"},
		{name: "broker peak RSS (MiB)", value: rssMiB, fmt: "%.0f"},
	}
	perSec := func(rr runResult) float64 { return float64(rr.Result.Records) / rr.Result.Seconds }
	switch {
	case strings.HasPrefix(caseID, "T1"):
		return append([]metric{
			{name: "k rec/s committed", value: func(rr, _ runResult) float64 { return perSec(rr) / 1e3 },
				goal: &goal{true, 1.5}, fmt: "%.1f"},
			{name: "MB/s committed", value: mbps, fmt: "%.1f"},
			{name: "transactions/s", value: func(rr, _ runResult) float64 { return perSec(rr) / txnRecordsT1 }, fmt: "%.0f"},
			{name: "MB per broker CPU-s", value: mbPerCPU, fmt: "%.0f"},
			{name: "CONCURRENT_TRANSACTIONS backoffs per 100 txns", value: backoffRate, fmt: "%.1f"},
		}, cpuRSS...)
	case strings.HasPrefix(caseID, "T2"):
		return append([]metric{
			{name: "MB/s of log, read_committed", value: mbps, goal: &goal{true, 1.5}, fmt: "%.1f"},
			{name: "MB/s of log, read_uncommitted", value: func(rr, _ runResult) float64 {
				return float64(rr.Result.Bytes) / rr.Result.UncommittedSeconds / 1e6
			}, fmt: "%.1f"},
			{name: "read_committed ÷ read_uncommitted, same broker", value: func(rr, _ runResult) float64 {
				return rr.Result.UncommittedSeconds / rr.Result.Seconds
			}, goal: &goal{true, 0.9}, goalOnA: true, fmt: "%.2f"},
			{name: "k committed rec/s", value: func(rr, _ runResult) float64 { return perSec(rr) / 1e3 }, fmt: "%.1f"},
			{name: "preload s (not measured)", value: func(rr, _ runResult) float64 { return rr.Result.PreloadSeconds }, fmt: "%.1f"},
		}, cpuRSS...)
	case strings.HasPrefix(caseID, "T3"):
		return append([]metric{
			{name: "p50 µs", value: func(rr, _ runResult) float64 { return rr.Result.P50us }, fmt: "%.0f"},
			{name: "p99 µs", value: func(rr, _ runResult) float64 { return rr.Result.P99us }, goal: &goal{false, 1.0}, fmt: "%.0f"},
			{name: "p99.9 µs", value: func(rr, _ runResult) float64 { return rr.Result.P999us }, fmt: "%.0f"},
			{name: "commits/s", value: func(rr, _ runResult) float64 { return perSec(rr) }, fmt: "%.0f"},
			{name: "CONCURRENT_TRANSACTIONS backoffs per 100 txns", value: backoffRate, fmt: "%.1f"},
		}, cpuRSS...)
	}
	return nil
}

// backoffRate is kgo's CONCURRENT_TRANSACTIONS backoffs (20 ms each) per
// 100 transactions of the window.
func backoffRate(rr, _ runResult) float64 {
	if rr.Result.Txns == 0 {
		return math.NaN()
	}
	return float64(rr.Result.ConcurrentBackoffs) * 100 / float64(rr.Result.Txns)
}

// txnProgress prints a T run's progress line; false if rr is not one.
func txnProgress(label string, rr runResult) bool {
	res := rr.Result
	switch {
	case strings.HasPrefix(rr.Case, "T1"):
		fmt.Fprintf(os.Stderr, "%s %.0f rec/s committed (%.0f txn/s) in %.1fs, %d CONCURRENT_TRANSACTIONS backoffs, broker cpu %.2fs rss %d MiB\n",
			label, float64(res.Records)/res.Seconds, float64(res.Records)/res.Seconds/txnRecordsT1, res.Seconds, res.ConcurrentBackoffs, rr.BrokerCPU, rr.PeakRSS>>20)
	case strings.HasPrefix(rr.Case, "T2"):
		fmt.Fprintf(os.Stderr, "%s log read: read_committed %.1f MB/s, read_uncommitted %.1f MB/s (preload %.1fs), broker cpu %.2fs rss %d MiB\n",
			label, float64(res.Bytes)/res.Seconds/1e6, float64(res.Bytes)/res.UncommittedSeconds/1e6, res.PreloadSeconds, rr.BrokerCPU, rr.PeakRSS>>20)
	case strings.HasPrefix(rr.Case, "T3"):
		fmt.Fprintf(os.Stderr, "%s EndTxn p50 %.0f µs p99 %.0f µs p99.9 %.0f µs, %d commits, %d CONCURRENT_TRANSACTIONS backoffs, broker cpu %.2fs rss %d MiB\n",
			label, res.P50us, res.P99us, res.P999us, res.Records, res.ConcurrentBackoffs, rr.BrokerCPU, rr.PeakRSS>>20)
	default:
		return false
	}
	return true
}

// txnSizing is the report's line on how the T cases were run, or "" if
// none was selected.
func txnSizing(pc planConfig) string {
	for _, c := range selected(pc) {
		if strings.HasPrefix(c.ID, "T") {
			return fmt.Sprintf("- Transactions: T1 transactions of %d × 1 KiB records round-robin over %d partitions, committed back to back for %s "+
				"after %s warm-up; T2 %d MiB preloaded on one partition by %d transactional producers in transactions of %d records, every %dth aborted, "+
				"read to its end once unmeasured, then with read_committed (the window) and read_uncommitted; T3 EndTxn(commit) of transactions of %d × 1 KiB records "+
				"(one per partition) back to back for %s; franz-go transactional producers, linger 0, no compression\n",
				txnRecordsT1, txnPartitions, pc.produceDur, pc.warmup, pc.preloadBytes>>20, 4, txnRecordsT1, txnAbortEvery,
				txnRecordsT3, pc.latencyDur)
		}
	}
	return ""
}
