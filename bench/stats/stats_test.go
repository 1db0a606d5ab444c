package stats

import (
	"math"
	"testing"
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
