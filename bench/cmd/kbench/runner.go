package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kbroker/bench/broker"
	"kbroker/bench/workload"
)

// runResult is one measured run of one side.
type runResult struct {
	Case      string
	Pair      int
	Side      string // "a" or "b"
	Kind      broker.Kind
	Result    workload.Result
	BrokerCPU float64 // broker CPU seconds inside the measured window
	LoadCPU   float64 // load process CPU seconds inside the measured window
	PeakRSS   int64   // broker VmHWM at the end of the run, bytes
	Err       string  `json:",omitempty"`
}

// runner holds what every run needs.
type runner struct {
	self       string // this executable, re-run as the load worker
	bins       broker.Binaries
	tmp        string
	profileDir string // -profile: a kbroker CPU profile of each measured window goes here
}

// runBroker starts a fresh broker of kind, creates topic on it, runs the
// load against it and stops it again. Failures are recorded in the result
// rather than aborting the job, so one bad run does not cost the others.
// c's KbrokerProps and KfakeConfigs configure the side of their kind.
func (r *runner) runBroker(ctx context.Context, kind broker.Kind, spec workload.Spec, c benchCase) runResult {
	rr := runResult{Kind: kind}
	profiling := r.profileDir != "" && kind == broker.Kbroker
	b, err := broker.StartWith(ctx, kind, r.bins, r.tmp, broker.StartOptions{Metrics: profiling, Props: c.KbrokerProps, KfakeConfigs: c.KfakeConfigs})
	if err != nil {
		rr.Err = err.Error()
		return rr
	}
	defer b.Stop()
	spec.Addr = b.Addr
	if err := broker.CreateTopicPartitions(ctx, b.Addr, spec.Topic, max(spec.Partitions, 1)); err != nil {
		rr.Err = err.Error()
		return rr
	}
	rr.Result, rr.BrokerCPU, rr.LoadCPU, err = r.runLoad(ctx, spec, b)
	if rss, rerr := broker.PeakRSSBytes(b.Pid()); rerr == nil {
		rr.PeakRSS = rss
	}
	if err != nil {
		rr.Err = err.Error()
		if tail := strings.TrimSpace(b.LogTail(1000)); tail != "" {
			rr.Err += "\n--- broker log tail ---\n" + tail
		}
	}
	return rr
}

// runLoad runs one workload in a fresh worker process. b may be nil (the
// loopback floors). It returns the result and the broker's and the worker's
// CPU seconds between the worker's start and end marks.
func (r *runner) runLoad(ctx context.Context, spec workload.Spec, b *broker.Broker) (workload.Result, float64, float64, error) {
	timeout := runTimeout(spec)
	arg, _ := json.Marshal(workerArgs{Spec: spec, Timeout: timeout})
	w, stdout, err := broker.StartChild(r.self, []string{"worker", string(arg)}, nil, os.Stderr)
	if err != nil {
		return workload.Result{}, 0, 0, err
	}
	defer w.Stop(2 * time.Second)

	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			lines <- s.Text()
		}
	}()

	var brokerExited <-chan struct{}
	brokerPid := 0
	if b != nil {
		brokerExited, brokerPid = b.Exited(), b.Pid()
	}
	// The orchestrator's own bound sits a little past the worker's, so a
	// healthy worker always reports its own timeout first.
	deadline := time.NewTimer(timeout + 15*time.Second)
	defer deadline.Stop()

	var b0, b1, l0, l1 float64
	cpu := func(pid int) float64 {
		if pid == 0 {
			return math.NaN()
		}
		s, err := broker.CPUSeconds(pid)
		if err != nil {
			return math.NaN()
		}
		return s
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return workload.Result{}, 0, 0, fmt.Errorf("worker exited without a result: %v", w.Wait(ctx))
			}
			switch {
			case line == lineMark+workload.MarkStart:
				b0, l0 = cpu(brokerPid), cpu(w.Pid())
				if b != nil && b.MetricsAddr != "" && r.profileDir != "" {
					defer r.profile(ctx, b, spec)()
				}
			case line == lineMark+workload.MarkEnd:
				b1, l1 = cpu(brokerPid), cpu(w.Pid())
			case strings.HasPrefix(line, lineResult):
				var res workload.Result
				if err := json.Unmarshal([]byte(line[len(lineResult):]), &res); err != nil {
					return res, 0, 0, fmt.Errorf("bad worker result: %w", err)
				}
				return res, b1 - b0, l1 - l0, nil
			case strings.HasPrefix(line, lineError):
				return workload.Result{}, 0, 0, fmt.Errorf("load: %s", line[len(lineError):])
			}
		case <-brokerExited:
			return workload.Result{}, 0, 0, fmt.Errorf("broker exited during the run: %v", "see log tail")
		case <-deadline.C:
			return workload.Result{}, 0, 0, fmt.Errorf("run timed out after %s", timeout+15*time.Second)
		case <-ctx.Done():
			return workload.Result{}, 0, 0, ctx.Err()
		}
	}
}

// runTimeout bounds one run: its planned length plus generous slack, and
// for the fetch preload a floor of 10 MB/s, far below either broker.
func runTimeout(s workload.Spec) time.Duration {
	t := s.Warmup + s.Duration + 30*time.Second
	if s.Kind == workload.KindRebalance {
		t += 90 * time.Second // no window of its own: as long as the members take to settle
	}
	if s.PreloadBytes > 0 {
		t += time.Duration(float64(s.PreloadBytes)/10e6*2) * time.Second
	}
	if s.Kind == workload.KindTxnFetch {
		// A transactional preload commits round trip by round trip, and
		// the log is read twice.
		t += time.Duration(float64(s.PreloadBytes)/10e6*4) * time.Second
	}
	return t
}

// profile takes a CPU profile of b over the measured window of spec in the
// background, into -profile; the returned func waits until it is written.
func (r *runner) profile(ctx context.Context, b *broker.Broker, spec workload.Spec) (wait func()) {
	seconds := int(spec.Duration / time.Second)
	if spec.Kind == workload.KindRebalance {
		// G2 has no window length of its own (it lasts until the
		// members settle, well under a second at 100 members): profile
		// the second from the window's start, which holds it.
		seconds = 1
	}
	if seconds < 1 {
		return func() {}
	}
	path := filepath.Join(r.profileDir, spec.Topic+".pprof")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.CPUProfile(ctx, seconds, path); err != nil {
			fmt.Fprintf(os.Stderr, "kbench: profile %s: %v\n", path, err)
			return
		}
		fmt.Fprintf(os.Stderr, "kbench: profile written to %s\n", path)
	}()
	return func() { <-done }
}
