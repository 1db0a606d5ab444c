package admin

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/bench/stats"
)

// ConnRateSpec is B7: connection_creation_rate on the client's ip.
type ConnRateSpec struct {
	Addr     string
	Limit    float64 // connections/s set on ips/127.0.0.1
	Duration time.Duration
	Dialers  int // concurrent dial loops
}

// ConnRateResult counts what the dial loops saw.
type ConnRateResult struct {
	Spec     ConnRateSpec
	Seconds  float64
	Accepted int // connections whose ApiVersions was answered
	Refused  int // connections closed by the broker unanswered
	Failed   int // dial errors and timeouts
	Ratio    float64
	// SteadyRatio is the accepted rate after the first second (the bucket's
	// initial tokens spent), ÷ limit.
	SteadyRatio float64
	FirstSecond int
}

// ConnectionRate runs spec.Dialers loops that dial, send ApiVersions v0,
// wait for the answer (or the broker closing the connection) and close,
// for spec.Duration. A connection over the rate is held by the broker for
// its throttle and closed unanswered (KIP-612), which paces the loop.
func ConnectionRate(ctx context.Context, spec ConnRateSpec) ConnRateResult {
	res := ConnRateResult{Spec: spec}
	var mu sync.Mutex
	var events []stats.Event
	start := time.Now()
	end := start.Add(spec.Duration)
	var wg sync.WaitGroup
	for range max(spec.Dialers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				outcome := dialOnce(ctx, spec.Addr, time.Until(end)+2*time.Second)
				at := time.Since(start)
				mu.Lock()
				switch outcome {
				case dialAnswered:
					if at <= spec.Duration {
						res.Accepted++
						events = append(events, stats.Event{At: at, N: 1})
					}
				case dialRefused:
					res.Refused++
				default:
					res.Failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Seconds = spec.Duration.Seconds()
	res.Ratio = float64(res.Accepted) / res.Seconds / spec.Limit
	sortEvents(events)
	res.FirstSecond = int(stats.WindowSum(events, 0, time.Second))
	res.SteadyRatio = stats.WindowSum(events, time.Second, spec.Duration) / (res.Seconds - 1) / spec.Limit
	return res
}

type dialOutcome int

const (
	dialAnswered dialOutcome = iota
	dialRefused
	dialFailed
)

func dialOnce(ctx context.Context, addr string, timeout time.Duration) dialOutcome {
	c, err := dialRaw(ctx, addr, "kbench-b7")
	if err != nil {
		return dialFailed
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	resp := kmsg.NewPtrApiVersionsResponse()
	_, err = c.Do(req, resp, timeout)
	switch {
	case err == nil:
		return dialAnswered
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return dialRefused
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() {
		return dialRefused
	}
	return dialFailed
}

func sortEvents(ev []stats.Event) {
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].At < ev[j-1].At; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}
