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
	// KindFetchMany is B2m: one consumer of many partitions, a little new
	// data in a few of them per fetch (fetch_many.go).
	KindFetchMany = "fetch-many"

	KindGroupConsume  = "group-consume"  // G1: a group's members read a preloaded topic
	KindRebalance     = "rebalance"      // G2: members join one group until all are assigned
	KindCommitLatency = "commit-latency" // G3: OffsetCommit latency at a fixed rate

	KindTxnProduce       = "txn-produce"        // T1: transactions committed back to back
	KindTxnFetch         = "txn-fetch"          // T2: read_committed vs read_uncommitted of a log with aborts
	KindTxnCommitLatency = "txn-commit-latency" // T3: EndTxn(commit) latency
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
	// AcksAll: produce and latency ask for acks=all, everything else as B1
	// and B3 (idempotence off, one request in flight): R1 compares it with
	// acks=1 on one broker, so only the acknowledgement may differ.
	AcksAll bool `json:",omitempty"`

	// Group workloads (group.go).
	Partitions        int32         `json:",omitempty"` // partitions of Topic (0: 1)
	Members           int           `json:",omitempty"` // G1, G2: group members
	GroupProtocol     string        `json:",omitempty"` // G1, G2: GroupClassic (default) or GroupConsumer (KIP-848)
	HeartbeatInterval time.Duration `json:",omitempty"` // G1, G2: members' heartbeat interval (0: kgo's 3 s)
	CommitRate        int           `json:",omitempty"` // G3: commits per second

	// Transactional workloads (txn.go).
	TxnRecords int `json:",omitempty"` // T1–T3: records per transaction
	AbortEvery int `json:",omitempty"` // T2: every AbortEvery-th transaction of the preload is aborted
	Rounds     int `json:",omitempty"` // B2m: records (each its own batch) per partition
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

	// T2: the read_uncommitted pass over the same log (Seconds is the
	// read_committed one).
	UncommittedSeconds float64 `json:",omitempty"`
	// T1, T3: transactions in the window, and kgo's 20 ms backoffs on
	// CONCURRENT_TRANSACTIONS among them.
	Txns, ConcurrentBackoffs int64 `json:",omitempty"`
	// B2m: Fetch requests the consumer sent inside the window, their bytes
	// on the wire and their responses' bytes.
	Fetches            int64 `json:",omitempty"`
	FetchRequestBytes  int64 `json:",omitempty"`
	FetchResponseBytes int64 `json:",omitempty"`

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
	case KindFetchMany:
		return FetchMany(ctx, spec, mark)
	case KindLatency:
		return Latency(ctx, spec, mark)
	case KindLoopback:
		return Loopback(ctx, spec, mark)
	case KindPrefault:
		return Prefault(ctx, spec, mark)
	case KindGroupConsume:
		return GroupConsume(ctx, spec, mark)
	case KindRebalance:
		return Rebalance(ctx, spec, mark)
	case KindCommitLatency:
		return CommitLatency(ctx, spec, mark)
	case KindTxnProduce:
		return TxnProduce(ctx, spec, mark)
	case KindTxnFetch:
		return TxnFetch(ctx, spec, mark)
	case KindTxnCommitLatency:
		return TxnCommitLatency(ctx, spec, mark)
	}
	return Result{}, fmt.Errorf("unknown workload kind %q", spec.Kind)
}
