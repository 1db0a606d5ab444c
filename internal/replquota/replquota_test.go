package replquota

import (
	"math"
	"testing"
	"time"
)

// A throttle lets one sample's worth through, then holds the average over
// the window to the bound; raising the bound lets replication go on at
// once, and an unbounded quota is never exceeded.
func TestQuotaHoldsTheRateToTheBound(t *testing.T) {
	q := New(11, time.Second)
	t0 := time.Unix(1000, 0)
	if q.Exceeded(t0) {
		t.Fatal("an unbounded quota is exceeded")
	}
	q.Record(10<<20, t0)
	if q.Exceeded(t0) {
		t.Fatal("an unbounded quota is exceeded after 10 MiB")
	}
	q.SetBound(1 << 20) // 1 MiB/s, with 10 MiB recorded in the first second
	if !q.Exceeded(t0.Add(500 * time.Millisecond)) {
		t.Fatal("10 MiB in one second is within 1 MiB/s")
	}
	// 10 MiB over 10 s is the bound: not above it.
	if q.Exceeded(t0.Add(10 * time.Second)) {
		t.Fatalf("rate %.0f after 10 s is above 1 MiB/s", q.Rate(t0.Add(10*time.Second)))
	}
	q.SetBound(100 << 20)
	if q.Exceeded(t0.Add(time.Second)) {
		t.Fatal("a raised bound is still exceeded")
	}
	q.SetBound(math.MaxInt64)
	q.Record(1<<30, t0.Add(2*time.Second))
	if q.Exceeded(t0.Add(2 * time.Second)) {
		t.Fatal("Long.MAX is a bound")
	}
	// Samples older than the window expire: an idle quota measures 0.
	if r := q.Rate(t0.Add(time.Minute)); r != 0 {
		t.Fatalf("rate after a minute idle: %v", r)
	}
}

// Kafka's lists: * names every partition; partition:broker pairs name the
// partitions of that broker only.
func TestParseReplicas(t *testing.T) {
	all := ParseReplicas(" * ", 1)
	if !all.All || !all.Has(7) {
		t.Fatalf("*: %+v", all)
	}
	r := ParseReplicas("0:1, 1:2,2:1,x:1,3", 1)
	if !r.Has(0) || r.Has(1) || !r.Has(2) || r.Has(3) {
		t.Fatalf("0:1,1:2,2:1 for broker 1: %+v", r)
	}
	if !ParseReplicas("", 1).Empty() || !ParseReplicas("0:2", 1).Empty() {
		t.Fatal("a list naming no partition of this broker is not empty")
	}
	q := New(2, time.Second)
	q.SetThrottled(map[string]Replicas{"a": r, "b": all}, true)
	q.SetThrottled(map[string]Replicas{"b": {}}, false)
	if !q.Throttled("a", 0) || q.Throttled("a", 1) || q.Throttled("b", 0) {
		t.Fatal("throttled set after two changes")
	}
}
