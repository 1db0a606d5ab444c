package admin

import (
	"math"
	"sync"
	"time"

	"kbroker/bench/stats"
)

// RateResult is one run of a byte-rate accuracy benchmark (B4, B5).
//
// Bytes are record value bytes acknowledged (produce) or returned (fetch),
// counted on the client. The broker charges a little more against the quota
// (the whole produce request, or whole record batches of a fetch), so every
// rate is also given in the bytes the broker charges ("quota bytes"),
// scaled by the overhead the client saw on the wire; the accuracy goal is
// judged on those, since they are what the quota limits.
type RateResult struct {
	Quota    float64 // bytes/s
	Seconds  float64 // length of the run
	Requests int     // acknowledged requests (produce) or non-empty responses (fetch)
	Overhead float64 // quota bytes ÷ value bytes

	First1s, First10s float64 // value bytes in [0, 1 s) and [0, 10 s) ÷ quota: seconds of quota
	// PreThrottle is the value bytes acknowledged before the first throttle,
	// ÷ quota: the initial burst as the simulation in internal/quota counts it.
	PreThrottle float64

	SteadyRate      float64 // value bytes/s from 10 s to the end (stats.SpanRate)
	SteadyQuotaRate float64 // the same in quota bytes
	SteadyEvents    int
	SteadyErr       float64 // |SteadyQuotaRate − Quota| ÷ Quota
	SteadyValueErr  float64 // |SteadyRate − Quota| ÷ Quota

	MaxThrottleMs float64
	Throttles     int

	Errors   int64
	FirstErr string `json:",omitempty"`
}

// steadyFrom is where the steady window starts, as in the anchors' B4(a).
const steadyFrom = 10 * time.Second

// eventLog collects timestamped byte counts from client callbacks.
type eventLog struct {
	mu     sync.Mutex
	t0     time.Time
	events []stats.Event
}

func (l *eventLog) add(n int) {
	at := time.Since(l.t0)
	l.mu.Lock()
	l.events = append(l.events, stats.Event{At: at, N: float64(n)})
	l.mu.Unlock()
}

func (l *eventLog) snapshot() []stats.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]stats.Event(nil), l.events...)
	// Callbacks from different goroutines may append slightly out of order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].At < out[j-1].At; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// summarizeRate fills the accuracy fields of r from events (value bytes),
// the run length and the wire overhead.
func summarizeRate(r *RateResult, events []stats.Event, dur time.Duration, firstThrottle time.Duration) {
	r.Seconds = dur.Seconds()
	r.Requests = len(events)
	r.First1s = stats.WindowSum(events, 0, time.Second) / r.Quota
	r.First10s = stats.WindowSum(events, 0, 10*time.Second) / r.Quota
	if firstThrottle >= 0 {
		r.PreThrottle = stats.WindowSum(events, 0, firstThrottle) / r.Quota
	} else {
		r.PreThrottle = math.NaN()
	}
	r.SteadyRate, r.SteadyEvents = stats.SpanRate(events, steadyFrom, dur)
	if r.Overhead <= 0 {
		r.Overhead = 1
	}
	r.SteadyQuotaRate = r.SteadyRate * r.Overhead
	r.SteadyErr = math.Abs(r.SteadyQuotaRate-r.Quota) / r.Quota
	r.SteadyValueErr = math.Abs(r.SteadyRate-r.Quota) / r.Quota
}
