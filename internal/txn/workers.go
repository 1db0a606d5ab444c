package txn

import (
	"sync/atomic"
	"time"
)

// workerIdle is how long a marker worker waits for its next job before it
// exits: long enough to carry a producer's back-to-back transactions from
// one to the next.
const workerIdle = 10 * time.Second

// workers runs the marker writers off the shard loops on goroutines that
// outlive one transaction. A goroutine made per marker started with a
// small stack and grew it again in the marker's append path at every
// transaction (runtime.newstack was ~5% of broker CPU under back-to-back
// transactions); an idle worker takes the next job with its stack grown.
// A job never waits for a free worker: with none idle a new one starts,
// so a marker retrying against an unavailable partition holds up nothing
// else.
type workers struct {
	jobs chan func() // unbuffered: a send succeeds only to an idle worker
	// started counts the worker goroutines ever started, for tests.
	started atomic.Int64
}

func newWorkers() *workers { return &workers{jobs: make(chan func())} }

// run runs fn on an idle worker, or on a new one.
func (w *workers) run(fn func()) {
	select {
	case w.jobs <- fn:
	default:
		w.started.Add(1)
		go w.loop(fn)
	}
}

func (w *workers) loop(fn func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(workerIdle)
		select {
		case fn = <-w.jobs:
		case <-idle.C:
			return
		}
	}
}
