// Package replquota is one side of the replication throttles, as Kafka's
// ReplicationQuotaManager: a byte rate over the partitions the topics'
// throttled replica lists name for this broker, and the bound
// (leader.replication.throttled.rate or follower.replication.throttled.rate)
// above which their replication pauses. The leader keeps one, for what it
// sends to followers, and the follower another, for what it asks for.
//
// The rate is Kafka's SimpleRate over replication.quota.window.num samples
// of replication.quota.window.size.seconds: the bytes of the samples not
// yet expired divided by the time since the oldest began (at least one
// sample's length). So a throttle that starts lets through one sample's
// worth at once and then holds the average over the window to the bound.
// The quota never delays anyone: the caller asks Exceeded and leaves the
// throttled partitions out while it is, as Kafka's leader answers a
// throttled partition with no records and its follower leaves one out of
// its fetch.
package replquota

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Quota is one side's replication quota. The zero value is not usable:
// New makes one.
type Quota struct {
	mu      sync.Mutex
	bound   float64 // bytes per second; +Inf: unbounded (Long.MAX, the default)
	window  time.Duration
	samples []sample
	cur     int // the sample being filled

	// throttled is the partitions named for this broker, by topic name;
	// replaced whole on a change (rare), read on every follower fetch.
	throttled atomic.Pointer[map[string]Replicas]
	// withheld counts the partition reads left out while the quota was
	// exceeded (a metric).
	withheld atomic.Uint64
	// unbounded caches bound == +Inf, so that a broker with no throttle
	// set takes no lock on its fetch path.
	unbounded atomic.Bool
}

type sample struct {
	start time.Time
	bytes float64
}

// New is a quota of samples windows of window each, unbounded and with no
// throttled partition until SetBound and SetThrottled say otherwise.
func New(samples int, window time.Duration) *Quota {
	q := &Quota{bound: math.Inf(1), window: window, samples: make([]sample, max(samples, 1))}
	q.unbounded.Store(true)
	empty := map[string]Replicas{}
	q.throttled.Store(&empty)
	return q
}

// SetBound sets the bound in bytes per second; math.MaxInt64 (Kafka's
// default, Long.MAX) is no bound. What was recorded is kept: a bound raised
// live lets throttled replication go on at once if the rate so far is
// under it.
func (q *Quota) SetBound(bytesPerSec int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bound = float64(bytesPerSec)
	if bytesPerSec == math.MaxInt64 {
		q.bound = math.Inf(1)
	}
	q.unbounded.Store(math.IsInf(q.bound, 1))
}

// Record counts n bytes of throttled partitions replicated at now.
func (q *Quota) Record(n int, now time.Time) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := &q.samples[q.cur]
	if s.start.IsZero() || now.Sub(s.start) >= q.window {
		q.cur = (q.cur + 1) % len(q.samples)
		s = &q.samples[q.cur]
		*s = sample{start: now}
	}
	s.bytes += float64(n)
}

// Rate is the byte rate at now over the samples not yet expired.
func (q *Quota) Rate(now time.Time) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rateLocked(now)
}

func (q *Quota) rateLocked(now time.Time) float64 {
	expiry := q.window * time.Duration(len(q.samples))
	var total float64
	oldest := now
	for i := range q.samples {
		s := &q.samples[i]
		if s.start.IsZero() || now.Sub(s.start) >= expiry {
			continue
		}
		total += s.bytes
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := max(now.Sub(oldest), q.window)
	return total / elapsed.Seconds()
}

// Exceeded reports whether the rate at now is above the bound, when
// throttled partitions' replication must pause.
func (q *Quota) Exceeded(now time.Time) bool {
	if q.unbounded.Load() {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rateLocked(now) > q.bound
}

// Throttled reports whether partition of topic is throttled here.
func (q *Quota) Throttled(topic string, partition int32) bool {
	r, ok := (*q.throttled.Load())[topic]
	return ok && r.Has(partition)
}

// Withhold is what a leader or follower asks of a throttled partition's
// replica that is out of the ISR (in-sync replicas are never held back, as
// in Kafka): whether to leave it out now. It counts the partitions it
// withholds.
func (q *Quota) Withhold(now time.Time) bool {
	if !q.Exceeded(now) {
		return false
	}
	q.withheld.Add(1)
	return true
}

// Withheld is how many partition reads Withhold left out.
func (q *Quota) Withheld() uint64 { return q.withheld.Load() }

// SetThrottled replaces the throttled partitions of the topics in set (a
// topic mapped to no replica is no longer throttled); with all, set
// replaces every topic's.
func (q *Quota) SetThrottled(set map[string]Replicas, all bool) {
	q.mu.Lock() // serialises the writers
	defer q.mu.Unlock()
	next := map[string]Replicas{}
	if !all {
		for t, r := range *q.throttled.Load() {
			next[t] = r
		}
	}
	for t, r := range set {
		if r.Empty() {
			delete(next, t)
		} else {
			next[t] = r
		}
	}
	q.throttled.Store(&next)
}

// Replicas is the partitions of one topic a throttled replica list names
// for one broker.
type Replicas struct {
	All        bool // the list is *
	Partitions map[int32]bool
}

// Has reports whether partition is named.
func (r Replicas) Has(partition int32) bool { return r.All || r.Partitions[partition] }

// Empty reports whether no partition is named.
func (r Replicas) Empty() bool { return !r.All && len(r.Partitions) == 0 }

// ParseReplicas reads a leader.replication.throttled.replicas or
// follower.replication.throttled.replicas value for broker, as Kafka's
// broker does: * names every partition; partition:broker pairs name the
// partitions paired with this broker. Entries that are not pairs of
// numbers (the topic config's check refuses them) name nothing.
func ParseReplicas(value string, broker int32) Replicas {
	if strings.TrimSpace(value) == "*" {
		return Replicas{All: true}
	}
	var r Replicas
	for _, item := range strings.Split(value, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		partition, err1 := strconv.ParseInt(p, 10, 32)
		id, err2 := strconv.ParseInt(b, 10, 32)
		if err1 != nil || err2 != nil || int32(id) != broker {
			continue
		}
		if r.Partitions == nil {
			r.Partitions = map[int32]bool{}
		}
		r.Partitions[int32(partition)] = true
	}
	return r
}
