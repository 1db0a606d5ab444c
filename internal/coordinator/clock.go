package coordinator

import (
	"sync"
	"time"
)

// Clock tells the time and runs functions later. Tests pass a ManualClock so
// that session timeouts and rebalance delays happen when the test says.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Stopper
}

// Stopper cancels a function scheduled with AfterFunc.
type Stopper interface{ Stop() bool }

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time                              { return time.Now() }
func (RealClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }

// ManualClock is a clock that moves only when Advance is called.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *ManualClock
	at      time.Time
	f       func()
	stopped bool
}

// NewManualClock starts a manual clock at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) AfterFunc(d time.Duration, f func()) Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock by d and runs, in time order, every function due
// by then.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *manualTimer
		idx := -1
		for i, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next, idx = t, i
			}
		}
		if next == nil {
			c.now = end
			c.timers = compactTimers(c.timers)
			c.mu.Unlock()
			return
		}
		c.timers = append(c.timers[:idx], c.timers[idx+1:]...)
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

func compactTimers(ts []*manualTimer) []*manualTimer {
	out := ts[:0]
	for _, t := range ts {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}
