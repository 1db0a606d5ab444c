package txn

import (
	"testing"
	"time"
)

// A marker job must never wait for a busy worker: a marker retrying
// against an unavailable partition would otherwise hold up every other
// transaction's markers.
func TestWorkersNeverWaitForABusyWorker(t *testing.T) {
	w := newWorkers()
	release := make(chan struct{})
	defer close(release)
	w.run(func() { <-release })
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the second job waited for the first, still running")
	}
}

// Back-to-back jobs reuse an idle worker, which is what keeps its grown
// stack from being grown again per marker.
func TestWorkersReuseAnIdleWorker(t *testing.T) {
	w := newWorkers()
	const jobs = 200
	for range jobs {
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		// Let the worker get back to waiting for its next job.
		time.Sleep(200 * time.Microsecond)
	}
	if n := w.started.Load(); n > jobs/10 {
		t.Fatalf("%d workers started for %d jobs run one after another; want an idle one reused", n, jobs)
	}
}
