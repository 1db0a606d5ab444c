package admin

import (
	"math"
	"testing"
	"time"

	"kbroker/bench/stats"
)

// A token-bucket producer at 1 MiB/s with 16 KiB requests: 64 requests at
// once (the 1 s burst), then one every 1/64 s. summarizeRate must report a
// burst of 1 s before the first throttle, ≈ 2 s of quota in the first
// second, ≈ 11 in the first 10 s, and the steady rate exactly.
func TestSummarizeRate(t *testing.T) {
	const quota = 1 << 20
	const req = 16 << 10
	var ev []stats.Event
	for range 64 {
		ev = append(ev, stats.Event{At: time.Millisecond, N: req})
	}
	step := time.Second / 64
	for i := 1; time.Duration(i)*step < 30*time.Second; i++ {
		ev = append(ev, stats.Event{At: time.Millisecond + time.Duration(i)*step, N: req})
	}
	r := RateResult{Quota: quota, Overhead: 1.01}
	summarizeRate(&r, ev, 30*time.Second, time.Millisecond+step/2)
	if math.Abs(r.PreThrottle-1) > 1e-9 {
		t.Errorf("PreThrottle = %v, want 1", r.PreThrottle)
	}
	if math.Abs(r.First1s-2) > 0.02 || math.Abs(r.First10s-11) > 0.02 {
		t.Errorf("First1s %v First10s %v, want ≈2 and ≈11", r.First1s, r.First10s)
	}
	if math.Abs(r.SteadyRate-quota) > 1e-6*quota || r.SteadyValueErr > 1e-6 {
		t.Errorf("steady %v (err %v), want the quota", r.SteadyRate, r.SteadyValueErr)
	}
	if math.Abs(r.SteadyErr-0.01) > 1e-6 {
		t.Errorf("steady error in quota bytes %v, want the 1%% overhead", r.SteadyErr)
	}
	if r.Requests != len(ev) {
		t.Errorf("Requests %d", r.Requests)
	}
}
