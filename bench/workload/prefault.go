package workload

import (
	"context"
	"runtime"
	"time"
)

// KindPrefault touches memory once before anything is measured.
const KindPrefault = "prefault"

// Prefault touches PreloadBytes of fresh memory, one write per page, and
// then exits with the process, returning the pages to the kernel.
//
// On a freshly booted VM guest (this project's Firecracker boxes) the first
// touch of a guest page also faults on the host and costs about 3× a normal
// page fault. Brokers that grow to gigabytes (kfake holds everything in
// memory) were measured up to 2× slower in the first pairs of a job than in
// later ones, purely from that. Touching the memory up front puts the
// guest's free pages in the state every later run sees.
func Prefault(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	const chunk = 256 << 20
	start := time.Now()
	mark(MarkStart)
	var keep [][]byte // hold everything until the end so each chunk is fresh memory
	var n int64
	for n < spec.PreloadBytes && ctx.Err() == nil {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
		n += chunk
	}
	runtime.KeepAlive(keep)
	mark(MarkEnd)
	return Result{Bytes: n, Seconds: time.Since(start).Seconds()}, ctx.Err()
}
