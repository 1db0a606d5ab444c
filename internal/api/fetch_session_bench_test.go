package api

import (
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// BenchmarkFetch1000Partitions is one consumer of 1,000 partitions with
// nothing new anywhere (B2m's case, in-process): a full fetch of all of
// them each time, against an incremental fetch of their session naming
// none, each decoded from its wire bytes and its answer encoded, as the
// connection does. The difference is what fetch sessions save the broker
// per fetch.
//
//	go test ./internal/api/ -run '^$' -bench Fetch1000 -benchmem
func BenchmarkFetch1000Partitions(b *testing.B) {
	const n = 1000
	s, c := benchServer(b, n), &wire.Conn{Principal: "User:ANONYMOUS"}
	for p := range int32(n) {
		produce(b, s, c, p, testkit.OneRecordBatch(b, make([]byte, 100)))
	}
	b.Run("full", func(b *testing.B) {
		req := fetchRequest(n, 1, 0)
		b.ReportAllocs()
		defer cpuPerPartition(b, n)()
		for b.Loop() {
			roundTrip(b, s, c, req)
		}
	})
	b.Run("incremental", func(b *testing.B) {
		req := fetchRequest(n, 1, 0)
		req.SessionEpoch = 0
		resp := fetch(b, s, c, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
		if resp.SessionID == 0 {
			b.Fatal("no session")
		}
		inc := kmsg.NewPtrFetchRequest()
		inc.Version, inc.MinBytes, inc.MaxBytes, inc.SessionID = req.Version, 1, req.MaxBytes, resp.SessionID
		b.ReportAllocs()
		defer cpuPerPartition(b, n)()
		for epoch := int32(1); b.Loop(); epoch++ {
			inc.SessionEpoch = epoch
			if resp := roundTrip(b, s, c, inc); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
				b.Fatalf("incremental fetch: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
			}
		}
	})
}

// roundTrip decodes req from its encoding, handles it and encodes the
// answer: the per-fetch work of the broker but for the socket.
func roundTrip(b *testing.B, s *Server, c *wire.Conn, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	wireReq := kmsg.NewPtrFetchRequest()
	wireReq.Version = req.Version
	if err := wireReq.ReadFrom(req.AppendTo(nil)); err != nil {
		b.Fatal(err)
	}
	resp := fetch(b, s, c, &wire.Request{Key: wireReq.Key(), Version: wireReq.Version, Body: wireReq})
	_ = resp.AppendTo(nil)
	return resp
}

// BenchmarkFetch1000PartitionsSmallBudget is B2m's fetch in-process: every
// partition has data at its fetch offset, the answer's budget holds about
// ten one-record batches, so ten partitions answer with records and 990
// are read with nothing left to give.
func BenchmarkFetch1000PartitionsSmallBudget(b *testing.B) {
	const n = 1000
	s, c := benchServer(b, n), &wire.Conn{Principal: "User:ANONYMOUS"}
	for p := range int32(n) {
		produce(b, s, c, p, testkit.OneRecordBatch(b, make([]byte, 100)))
	}
	small := func(epoch int32) *kmsg.FetchRequest {
		req := fetchRequest(n, 0, 0)
		req.MaxBytes, req.SessionEpoch = 2000, epoch
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = 2000
		}
		return req
	}
	b.Run("full", func(b *testing.B) {
		req := small(-1)
		b.ReportAllocs()
		defer cpuPerPartition(b, n)()
		for b.Loop() {
			roundTrip(b, s, c, req)
		}
	})
	b.Run("incremental", func(b *testing.B) {
		resp := roundTrip(b, s, c, small(0))
		inc := kmsg.NewPtrFetchRequest()
		inc.Version, inc.MinBytes, inc.MaxBytes, inc.SessionID = 12, 1, 2000, resp.SessionID
		b.ReportAllocs()
		defer cpuPerPartition(b, n)()
		for epoch := int32(1); b.Loop(); epoch++ {
			inc.SessionEpoch = epoch
			if resp := roundTrip(b, s, c, inc); resp.ErrorCode != 0 || len(resp.Topics) != 1 {
				b.Fatalf("incremental fetch: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
			}
		}
	})
	// As a broker sees it: between two fetches of a consumer, the
	// consumer's own work (and every other process's) has pushed the
	// session's partitions out of the processor's caches, which the loop
	// above keeps warm. Only the fetch's own thread's CPU time counts.
	// Run it with a fixed count: -benchtime 300x.
	b.Run("incremental-cold", func(b *testing.B) {
		resp := roundTrip(b, s, c, small(0))
		inc := kmsg.NewPtrFetchRequest()
		inc.Version, inc.MinBytes, inc.MaxBytes, inc.SessionID = 12, 1, 2000, resp.SessionID
		runtime.LockOSThread() // the fetch runs on this goroutine, so on this thread
		defer runtime.UnlockOSThread()
		evict := make([]byte, 64<<20) // larger than any last-level cache here
		var used time.Duration
		for epoch := int32(1); b.Loop(); epoch++ {
			for i := 0; i < len(evict); i += 64 {
				evict[i]++
			}
			inc.SessionEpoch = epoch
			start := threadCPU()
			if resp := roundTrip(b, s, c, inc); resp.ErrorCode != 0 || len(resp.Topics) != 1 {
				b.Fatalf("incremental fetch: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
			}
			used += threadCPU() - start
		}
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/n, "cpu-ns/partition")
	})
}

// threadCPU is the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID,
// to the nanosecond).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// cpuPerPartition reports the process's CPU time (user and system, GC
// included) per fetch and per partition fetched, from now until the
// returned function runs: unlike ns/op, it does not count the time other
// processes of a busy machine take the cores.
func cpuPerPartition(b *testing.B, partitions int) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		used := cpu() - start
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/fetch")
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/float64(partitions), "cpu-ns/partition")
	}
}
