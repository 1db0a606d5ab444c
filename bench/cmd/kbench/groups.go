package main

// The consumer-group cases of the throughput suite (issue 15), side by side
// with kfake like B1–B3:
//
//	G1 group consume   3 members of one group read a preloaded 6-partition topic
//	G2 rebalance N     N members join one new group; time until all are assigned
//	G3 commit latency  OffsetCommit p99 at 1,000 commits/s
//
// kbroker runs them with group.initial.rebalance.delay.ms=0; kfake has no
// initial delay at all (it completes a join as soon as every known member
// has joined), so the two start the same way. G2 runs once per protocol in
// -group-protocols: "classic" today; add "consumer" for KIP-848 (kgo's
// ServerSideBalancer), which kfake already serves.
//
// G4, the 10,000-group replay and memory case, is kbroker-only and lives in
// the admin suite (admin_groups.go).

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"kbroker/bench/workload"
)

// groupProtocols is -group-protocols: the protocols G2 (and G1) run with.
var groupProtocols = flag.String("group-protocols", workload.GroupClassic,
	"throughput suite: comma-separated group protocols for G1/G2: classic, consumer (KIP-848)")

// groupKbrokerProps make kbroker's first rebalance of a new group complete
// as soon as its members have joined, as kfake's does.
var groupKbrokerProps = []string{"group.initial.rebalance.delay.ms=0"}

// groupHeartbeat is the members' heartbeat interval in G1 and G2. A member
// learns of a rebalance another member started from its next heartbeat;
// at kgo's default 3 s, G2 would measure mostly the client's timer.
const groupHeartbeat = 250 * time.Millisecond

func groupCases(pc planConfig) []benchCase {
	var out []benchCase
	for _, proto := range strings.Split(*groupProtocols, ",") {
		proto = strings.TrimSpace(proto)
		suffix, props, kfakeConfigs := "", groupKbrokerProps, []string(nil)
		if proto != workload.GroupClassic {
			suffix = " " + proto
		}
		if proto == workload.GroupConsumer {
			// A KIP-848 member heartbeats at the interval the broker
			// dictates (5 s by default on both): the same on both sides,
			// and as short as the classic members' here.
			hb := fmt.Sprintf("group.consumer.heartbeat.interval.ms=%d", groupHeartbeat.Milliseconds())
			props = append(slices.Clone(groupKbrokerProps), hb)
			kfakeConfigs = []string{hb}
		}
		out = append(out, benchCase{"G1 group consume" + suffix, workload.Spec{
			Kind: workload.KindGroupConsume, RecordBytes: 1024, PreloadBytes: pc.preloadBytes, FetchMaxBytes: pc.fetchMax,
			Partitions: 6, Members: 3, GroupProtocol: proto, HeartbeatInterval: groupHeartbeat,
		}, props, kfakeConfigs})
		for _, n := range []int{10, 100} {
			out = append(out, benchCase{fmt.Sprintf("G2 rebalance %d%s", n, suffix), workload.Spec{
				Kind: workload.KindRebalance, Partitions: int32(n), Members: n,
				GroupProtocol: proto, HeartbeatInterval: groupHeartbeat,
			}, props, kfakeConfigs})
		}
	}
	out = append(out, benchCase{"G3 commit latency", workload.Spec{
		Kind: workload.KindCommitLatency, Warmup: pc.warmup / 2, Duration: pc.latencyDur, CommitRate: 1000,
	}, groupKbrokerProps, nil})
	return out
}

// groupMetrics are the report rows of the G cases. Goals (issue 15): G1 ≥
// 1.5× kfake's MB/s; G2 time ≤ kfake's; G3 p99 ≤ kfake's.
func groupMetrics(caseID string) []metric {
	cpuRSS := []metric{
		{name: "broker CPU (cores)", value: cores, fmt: "%.2f"},
		{name: "load CPU (cores)", value: loadCPU, fmt: "%.2f"},
		{name: "broker peak RSS (MiB)", value: rssMiB, fmt: "%.0f"},
	}
	switch {
	case strings.HasPrefix(caseID, "G1"):
		return append([]metric{
			{name: "MB/s consumed", value: mbps, goal: &goal{true, 1.5}, fmt: "%.1f"},
			{name: "k rec/s consumed", value: func(rr, _ runResult) float64 {
				return float64(rr.Result.Records) / rr.Result.Seconds / 1e3
			}, fmt: "%.1f"},
			{name: "seconds, join to last record", value: func(rr, _ runResult) float64 { return rr.Result.Seconds }, fmt: "%.2f"},
			{name: "preload s (not measured)", value: func(rr, _ runResult) float64 { return rr.Result.PreloadSeconds }, fmt: "%.1f"},
		}, cpuRSS...)
	case strings.HasPrefix(caseID, "G2"):
		return append([]metric{
			{name: "ms until every member is assigned", value: func(rr, _ runResult) float64 { return rr.Result.Seconds * 1e3 },
				goal: &goal{false, 1.0}, fmt: "%.0f"},
		}, cpuRSS...)
	case strings.HasPrefix(caseID, "G3"):
		return append([]metric{
			{name: "p50 µs", value: func(rr, _ runResult) float64 { return rr.Result.P50us }, fmt: "%.0f"},
			{name: "p99 µs", value: func(rr, _ runResult) float64 { return rr.Result.P99us }, goal: &goal{false, 1.0}, fmt: "%.0f"},
			{name: "p99.9 µs", value: func(rr, _ runResult) float64 { return rr.Result.P999us }, fmt: "%.0f"},
			{name: "commits/s achieved", value: func(rr, _ runResult) float64 {
				return float64(rr.Result.Records) / rr.Result.Seconds
			}, fmt: "%.0f"},
		}, cpuRSS...)
	}
	return nil
}

// groupProgress prints a G run's progress line; false if rr is not one.
func groupProgress(label string, rr runResult) bool {
	res := rr.Result
	switch {
	case strings.HasPrefix(rr.Case, "G2"):
		fmt.Fprintf(os.Stderr, "%s %d members assigned in %.0f ms, broker cpu %.2fs rss %d MiB\n",
			label, res.Records, res.Seconds*1e3, rr.BrokerCPU, rr.PeakRSS>>20)
	case strings.HasPrefix(rr.Case, "G3"):
		fmt.Fprintf(os.Stderr, "%s p50 %.0f µs p99 %.0f µs p99.9 %.0f µs, %d commits (%.0f/s), broker cpu %.2fs rss %d MiB errors %d\n",
			label, res.P50us, res.P99us, res.P999us, res.Records, float64(res.Records)/res.Seconds, rr.BrokerCPU, rr.PeakRSS>>20, res.Errors)
	default:
		return false
	}
	return true
}

// groupSizing is the report's line on how the G cases were run, or "" if
// none was selected.
func groupSizing(pc planConfig) string {
	for _, c := range selected(pc) {
		if strings.HasPrefix(c.ID, "G") {
			return fmt.Sprintf("- Groups: G1 3 members of one group on 6 partitions preloaded with %d MiB of 1 KiB records; "+
				"G2 N members on N partitions, created at once; G1/G2 heartbeat %s, protocols %s; G3 simple OffsetCommits of one partition "+
				"at 1,000/s for %s; kbroker with group.initial.rebalance.delay.ms=0 (kfake has no initial delay)\n",
				pc.preloadBytes>>20, groupHeartbeat, *groupProtocols, pc.latencyDur)
		}
	}
	return ""
}
