package quota

import (
	"math"
	"time"
)

// bucket is a token bucket in the quota's own unit (bytes, percent-seconds
// of a thread, partitions, connections). It starts full, refills at rate up
// to capacity, and may go into debt down to floor: "send, then mute for the
// debt" (KIP-219). Its owner serialises access.
type bucket struct {
	rate     float64 // units per second; always > 0
	burstSec float64 // capacity = rate × burstSec
	floorSec float64 // floor = −rate × floorSec; +Inf: unbounded debt
	capacity float64
	floor    float64
	tokens   float64
	last     int64 // ns of the last refill (Manager clock)
}

func newBucket(rate, burstSec, floorSec float64, now int64) bucket {
	b := bucket{burstSec: burstSec, floorSec: floorSec, last: now}
	b.setRate(rate, now)
	b.tokens = b.capacity
	return b
}

func (b *bucket) refill(now int64) {
	if now <= b.last {
		return // a clock that stands still or steps back adds nothing
	}
	b.tokens = min(b.capacity, b.tokens+b.rate*float64(now-b.last)/1e9)
	b.last = now
}

// setRate changes the limit in place: usage so far is settled at the old
// rate and kept, the burst shrinks with a lower limit but does not grow
// with a higher one.
func (b *bucket) setRate(rate float64, now int64) {
	b.refill(now)
	b.rate = rate
	b.capacity = rate * b.burstSec
	b.floor = math.Inf(-1)
	if !math.IsInf(b.floorSec, 1) {
		b.floor = -rate * b.floorSec
	}
	b.tokens = min(b.tokens, b.capacity)
}

// take records v and returns the balance after it.
func (b *bucket) take(now int64, v float64) float64 {
	b.refill(now)
	b.tokens = max(b.floor, b.tokens-v)
	return b.tokens
}

// give returns v (an un-recorded fetch).
func (b *bucket) give(now int64, v float64) {
	b.refill(now)
	b.tokens = min(b.capacity, b.tokens+v)
}

// maxThrottle is the most a throttle_time_ms (int32) can say.
const maxThrottle = time.Duration(math.MaxInt32) * time.Millisecond

// throttleFor is the time rate needs to refill deficit, rounded up to whole
// milliseconds (the wire unit: a client that waits what it was told never
// comes back early) and capped at limit. Deficits worth under a microsecond
// are float dust, not debt.
func throttleFor(deficit, rate float64, limit time.Duration) time.Duration {
	if !(deficit > 0) || !(rate > 0) {
		return 0
	}
	sec := deficit / rate
	if sec < 1e-6 {
		return 0
	}
	ms := math.Ceil(sec * 1000)
	if !(ms < float64(limit/time.Millisecond)) { // also catches +Inf
		return limit
	}
	return time.Duration(ms) * time.Millisecond
}
