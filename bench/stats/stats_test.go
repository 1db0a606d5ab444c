package stats

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	samples := make([]float64, 1000)
	for i := range samples {
		samples[i] = float64(1000 - i) // reversed: Percentile must sort
	}
	got := Percentiles(samples, 0.5, 0.99, 0.999, 1, 0)
	want := []float64{500, 990, 999, 1000, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("quantile %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if p := Percentile([]float64{7}, 0.999); p != 7 {
		t.Errorf("single sample: got %v", p)
	}
	if p := Percentile(nil, 0.5); !math.IsNaN(p) {
		t.Errorf("no samples: got %v, want NaN", p)
	}
}

func TestMedianSkipsNaN(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{nan, 5, nan}, 5},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := Median([]float64{nan}); !math.IsNaN(got) {
		t.Errorf("all NaN: got %v", got)
	}
}

func TestRatioMedianUsesPairs(t *testing.T) {
	// The median of per-pair ratios is not the ratio of medians: pair-wise
	// division cancels drift that hits both runs of a pair.
	a := []float64{200, 100, 300, math.NaN(), 10}
	b := []float64{100, 100, 100, 100, 0}
	got, n := RatioMedian(a, b)
	if n != 3 || got != 2 {
		t.Errorf("RatioMedian = %v over %d pairs, want 2 over 3", got, n)
	}
}

func TestWindowSumAndSpanRate(t *testing.T) {
	s := time.Second
	// One 1 MiB request acknowledged every 1.0001 s from t = 0.5 s: the
	// span rate is the true rate, the fixed window over [10 s, 25 s) holds
	// 15 of them though the rate is just under 1 MiB/s.
	var ev []Event
	for i := range 30 {
		ev = append(ev, Event{At: s/2 + time.Duration(i)*(s+100*time.Microsecond), N: 1 << 20})
	}
	rate, n := SpanRate(ev, 10*s, 25*s)
	want := float64(1<<20) / 1.0001
	if math.Abs(rate-want) > 1e-6*want || n != 15 {
		t.Errorf("SpanRate = %v over %d events, want %v over 15", rate, n, want)
	}
	if got := WindowSum(ev, 0, time.Second); got != 1<<20 {
		t.Errorf("WindowSum first second = %v, want one request", got)
	}
	if got := WindowSum(ev, 0, 10*s); got != 10<<20 {
		t.Errorf("WindowSum first 10 s = %v, want 10 requests", got)
	}
	if r, n := SpanRate(ev, 100*s, 200*s); !math.IsNaN(r) || n != 0 {
		t.Errorf("empty window: %v, %d", r, n)
	}
	if r, n := SpanRate(ev[:1], 0, 200*s); !math.IsNaN(r) || n != 1 {
		t.Errorf("one event: %v, %d", r, n)
	}
}
