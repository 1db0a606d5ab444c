package quota

// Broker-wide and listener-wide connection creation rates (KIP-612:
// max.connection.creation.rate, listener.name.<l>.max.connection.creation.rate).
// Unlike the per-IP connection_creation_rate, going over them refuses
// nothing: Kafka's acceptor holds the connection it has just accepted until
// the rates allow it, and accepts nothing else meanwhile, so new clients
// queue in the listen backlog. The broker-wide rate counts the connections
// of every listener but the inter-broker one, which only its own listener
// rate throttles.

import (
	"context"
	"math"
	"sync"
	"time"
)

// AcceptRates holds the connection creation rate limits of the broker and
// of each listener. It is safe for concurrent use by every accept loop.
type AcceptRates struct {
	m *Manager // its clock and the connection quotas' burst

	mu        sync.Mutex
	broker    *bucket            // nil: unlimited
	listeners map[string]*bucket // absent: unlimited
	exempt    string             // the inter-broker listener
	changed   chan struct{}      // closed, and replaced, by every Set
}

// NewAcceptRates returns rates with no limits, measured with m's clock and
// with the burst of m's per-IP connection quotas.
func (m *Manager) NewAcceptRates() *AcceptRates {
	return &AcceptRates{m: m, listeners: map[string]*bucket{}, changed: make(chan struct{})}
}

// AcceptLimits are connection creation rates in connections per second;
// zero or less, or Kafka's default Int.MaxValue, means unlimited.
type AcceptLimits struct {
	Broker    float64
	Listeners map[string]float64
	// Exempt is the inter-broker listener, which the broker-wide rate does
	// not count ("" when there is none or only one listener).
	Exempt string
}

// unlimitedRate is max.connection.creation.rate's default (Int.MaxValue).
const unlimitedRate = math.MaxInt32

// Set installs new limits. Usage so far is kept (a lower rate delays the
// next connections at once); connections waiting in Admit re-check.
func (r *AcceptRates) Set(l AcceptLimits) {
	now := r.m.nanos()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broker = r.reshape(r.broker, l.Broker, now)
	next := map[string]*bucket{}
	for name, rate := range l.Listeners {
		if b := r.reshape(r.listeners[name], rate, now); b != nil {
			next[name] = b
		}
	}
	r.listeners, r.exempt = next, l.Exempt
	close(r.changed)
	r.changed = make(chan struct{})
}

// reshape keeps b at a new rate, makes a bucket for a new limit, or drops
// it for no limit. Rate 0 (allowed by Kafka's validator) lets one
// connection in per quota window, as Kafka's throttle cap does.
func (r *AcceptRates) reshape(b *bucket, rate float64, now int64) *bucket {
	if rate < 0 || rate >= unlimitedRate {
		return nil
	}
	rate = max(rate, 1/r.m.window)
	burst, _ := r.m.shape(kConnection, rate)
	if b == nil {
		// Debt is unbounded: each accept loop owes at most the one
		// connection it holds.
		nb := newBucket(rate, burst, math.Inf(1), now)
		return &nb
	}
	if b.rate != rate {
		b.burstSec = burst
		b.setRate(rate, now)
	}
	return b
}

// buckets lists the limits a connection on listener counts against. The
// caller holds r.mu.
func (r *AcceptRates) buckets(listener string) []*bucket {
	var out []*bucket
	if b := r.listeners[listener]; b != nil {
		out = append(out, b)
	}
	if r.broker != nil && listener != r.exempt {
		out = append(out, r.broker)
	}
	return out
}

// Admit counts a connection just accepted on listener and returns once the
// rates allow it, having waited as long as they are over (the wait it
// reports), or with ctx's error when ctx ends first.
func (r *AcceptRates) Admit(ctx context.Context, listener string) (time.Duration, error) {
	start := time.Now()
	r.mu.Lock()
	now := r.m.nanos()
	for _, b := range r.buckets(listener) {
		b.take(now, 1)
	}
	r.mu.Unlock()
	for {
		delay, changed := r.debt(listener)
		if delay <= 0 {
			return time.Since(start), nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return time.Since(start), ctx.Err()
		}
	}
}

// debt is how long until every rate listener counts against has refilled
// what it owes, and the channel that says the limits changed meanwhile.
func (r *AcceptRates) debt(listener string) (time.Duration, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.m.nanos()
	var delay time.Duration
	for _, b := range r.buckets(listener) {
		b.refill(now)
		delay = max(delay, throttleFor(-b.tokens, b.rate, maxThrottle))
	}
	return delay, r.changed
}

// Refund takes back a connection Admit counted that is refused after all
// (over its IP's rate), as Kafka un-records it from the listener and broker
// sensors.
func (r *AcceptRates) Refund(listener string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.m.nanos()
	for _, b := range r.buckets(listener) {
		b.give(now, 1)
	}
}
