// Package workload holds the measured client side of the benchmarks: the
// franz-go kgo client producing and fetching against a broker, and the raw
// loopback TCP floors the broker numbers are compared with.
//
// A workload runs inside a short-lived load process (kbench's "worker"
// mode) and reports through Mark the instants its measured window opens and
// closes, so that whoever started it can read the broker's CPU time at
// exactly those instants. It knows nothing about how brokers are started.
package workload

import (
	"context"
	"fmt"
	"time"
)

// Kinds of workload.
const (
	KindProduce  = "produce"  // B1: saturated produce throughput
	KindFetch    = "fetch"    // B2: preload, then fetch everything from offset 0
	KindLatency  = "latency"  // B3: serial ProduceSync latency
	KindLoopback = "loopback" // physical floors: TCP stream and ping-pong RTT
)

// Mark events.
const (
	MarkStart = "start"
	MarkEnd   = "end"
)

// Mark is called with MarkStart when the measured window opens and MarkEnd
// when it closes. It must be fast; it is called on the measuring goroutine.
type Mark func(event string)

// Spec describes one run. Unused fields are zero.
type Spec struct {
	Kind          string
	Addr          string
	Topic         string
	ClientID      string // produce: the client-id (default kgo's); quotas are keyed on it
	RecordBytes   int
	Warmup        time.Duration // excluded from the window: connection setup, first metadata
	Duration      time.Duration // length of the measured window (produce, latency, loopback)
	PreloadBytes  int64         // fetch: payload bytes to produce before fetching
	FetchMaxBytes int32         // fetch: FetchMaxBytes and FetchMaxPartitionBytes
	Idempotent    bool          `json:",omitempty"` // produce: kgo's idempotent defaults (producerOpts)
}

// Result is what a run measured. Rates are derived by the caller from
// counts and Seconds so that nothing is rounded twice.
type Result struct {
	Records  int64   // records acknowledged (produce, latency) or returned (fetch)
	Bytes    int64   // record value bytes acknowledged or returned
	Seconds  float64 // length of the measured window
	Errors   int64   // records that failed inside the window
	FirstErr string  `json:",omitempty"`

	// Latency (B3), in microseconds.
	P50us, P99us, P999us float64

	// Fetch (B2): how long the preload took, for the time budget.
	PreloadSeconds float64

	// Loopback floors.
	StreamBytesPerSec float64
	RTTp50us          float64
}

// Run dispatches spec to its workload. ctx bounds the whole run.
func Run(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	switch spec.Kind {
	case KindProduce:
		return Produce(ctx, spec, mark)
	case KindFetch:
		return Fetch(ctx, spec, mark)
	case KindLatency:
		return Latency(ctx, spec, mark)
	case KindLoopback:
		return Loopback(ctx, spec, mark)
	case KindPrefault:
		return Prefault(ctx, spec, mark)
	}
	return Result{}, fmt.Errorf("unknown workload kind %q", spec.Kind)
}
