package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"kbroker/bench/broker"
	"kbroker/bench/workload"
)

// benchCase is one row group of the report: a workload run once per side per
// pair.
type benchCase struct {
	ID   string // e.g. "B1 1KiB"
	Spec workload.Spec
	// KbrokerProps are server.properties lines for the kbroker side only
	// (the group cases turn the initial rebalance delay off, which kfake
	// does not have).
	KbrokerProps []string
	// KfakeConfigs are kfake broker configs (kfake.BrokerConfigs) for the
	// kfake side only.
	KfakeConfigs []string
}

// planConfig are the sizing knobs from the flags.
type planConfig struct {
	pairs        int
	produceDur   time.Duration
	latencyDur   time.Duration
	warmup       time.Duration
	preloadBytes int64
	fetchMax     int32
	loopbackDur  time.Duration
	only         []string // case ID prefixes to run; empty runs all
}

// selected filters cases by the -cases prefixes.
func selected(pc planConfig) []benchCase {
	all := cases(pc)
	if len(pc.only) == 0 {
		return all
	}
	var out []benchCase
	for _, c := range all {
		for _, p := range pc.only {
			if strings.HasPrefix(c.ID, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func cases(pc planConfig) []benchCase {
	produce := func(size int, name string) benchCase {
		return benchCase{"B1 " + name, workload.Spec{
			Kind: workload.KindProduce, RecordBytes: size, Warmup: pc.warmup, Duration: pc.produceDur,
		}, nil, nil}
	}
	return append([]benchCase{
		produce(1024, "1KiB"),
		produce(100, "100B"),
		produce(16<<10, "16KiB"),
		// Not in the plan: kgo's own producer defaults (idempotent,
		// acks=all, 5 requests in flight), which pipeline requests on one
		// connection; no goal, a check on the pipelined path.
		{"B1i 1KiB idempotent", workload.Spec{
			Kind: workload.KindProduce, RecordBytes: 1024, Warmup: pc.warmup, Duration: pc.produceDur, Idempotent: true,
		}, nil, nil},
		{"B2 fetch", workload.Spec{
			Kind: workload.KindFetch, RecordBytes: 1024, PreloadBytes: pc.preloadBytes, FetchMaxBytes: pc.fetchMax,
		}, nil, nil},
		{"B3 latency", workload.Spec{
			Kind: workload.KindLatency, RecordBytes: 1024, Warmup: pc.warmup / 2, Duration: pc.latencyDur,
		}, nil, nil},
	}, append(b2mCases(), append(groupCases(pc), txnCases(pc)...)...)...)
}

type side struct {
	name string
	kind broker.Kind
}

// results is everything one job measured.
type results struct {
	Loopback []runResult // one per pair
	Runs     []runResult // one per pair × case × side
}

// runPlan interleaves the sides within every pair and every case, so slow
// drift on the shared box (other builds, thermal, page cache) hits both
// sides of a ratio nearly equally. The order alternates A-B, B-A between
// pairs: a kfake-vs-kfake self-check with A always first measured the first
// run of a pair ~10 % slower in 5 of 5 pairs (B1 1 KiB), an order effect we
// could not remove at its source. With an even number of pairs it cancels.
// The loopback floors are re-measured once per pair for the same reason.
func runPlan(ctx context.Context, r *runner, pc planConfig, a, b broker.Kind) results {
	var out results
	cs := selected(pc)
	sides := []side{{"a", a}, {"b", b}}
	for pair := range pc.pairs {
		if ctx.Err() != nil {
			break
		}
		lb := runResult{Case: "loopback", Pair: pair}
		var err error
		lb.Result, _, lb.LoadCPU, err = r.runLoad(ctx, workload.Spec{Kind: workload.KindLoopback, Duration: pc.loopbackDur}, nil)
		if err != nil {
			lb.Err = err.Error()
		}
		progress(lb)
		out.Loopback = append(out.Loopback, lb)

		order := sides
		if pair%2 == 1 {
			order = []side{sides[1], sides[0]}
		}
		for _, c := range cs {
			for _, s := range order {
				if ctx.Err() != nil {
					return out
				}
				spec := c.Spec
				spec.Topic = fmt.Sprintf("kbench-%d-%d-%s", time.Now().UnixNano(), pair, s.name)
				rr := r.runBroker(ctx, s.kind, spec, c)
				rr.Case, rr.Pair, rr.Side = c.ID, pair, s.name
				progress(rr)
				out.Runs = append(out.Runs, rr)
			}
		}
	}
	return out
}

// progress prints one line per run on stderr so a long job shows life and a
// failing broker is visible as it happens.
func progress(rr runResult) {
	res := rr.Result
	label := fmt.Sprintf("pair %d %-10s %-1s %-7s", rr.Pair+1, rr.Case, rr.Side, rr.Kind)
	switch {
	case rr.Err != "":
		fmt.Fprintf(os.Stderr, "%s ERROR %s\n", label, rr.Err)
	case groupProgress(label, rr): // groups.go
	case txnProgress(label, rr): // txns.go
	case rr.Case == "loopback":
		fmt.Fprintf(os.Stderr, "%s stream %.2f GB/s, rtt p50 %.1f µs\n", label, res.StreamBytesPerSec/1e9, res.RTTp50us)
	case rr.Case == "B3 latency":
		fmt.Fprintf(os.Stderr, "%s p50 %.0f µs p99 %.0f µs p99.9 %.0f µs, %d produces, broker cpu %.2fs rss %d MiB errors %d\n",
			label, res.P50us, res.P99us, res.P999us, res.Records, rr.BrokerCPU, rr.PeakRSS>>20, res.Errors)
	default:
		fmt.Fprintf(os.Stderr, "%s %.1f MB/s %.0f rec/s in %.1fs, broker cpu %.2fs rss %d MiB errors %d\n",
			label, float64(res.Bytes)/res.Seconds/1e6, float64(res.Records)/res.Seconds, res.Seconds,
			rr.BrokerCPU, rr.PeakRSS>>20, res.Errors)
	}
}
