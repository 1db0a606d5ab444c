package storage

import (
	"sync"
	"sync/atomic"
)

// clockCache bounds what segments hold on to (open files, loaded indexes,
// files.go) by a total weight, letting go of the least recently used first. It
// is a CLOCK approximation of LRU: a use sets the segment's used bit; the hand
// clears set bits as it passes them and lets go of the first segment it finds
// unused, so a segment used since the hand last passed survives one more turn.
//
// Letting go never waits: evict only try-locks the segment, so that nothing
// is waited for under the cache's mutex (add's caller may even hold the
// segment's lock, which spares the segment it adds). A segment in use is
// skipped, which makes the bound soft: over then says the total is above max,
// and trim, called after uses, tries again.
type clockCache struct {
	mu    sync.Mutex
	max   int64
	total int64         // weight of the entries
	ents  []*cacheEntry // an entry's pos is its index here
	hand  int           // where the next eviction looks first
	over  atomic.Bool
	// evict lets go of what s holds if it can without waiting, and reports
	// whether it did. It runs with mu held.
	evict func(s *segment) bool
}

// cacheEntry is a segment's place in a clockCache.
type cacheEntry struct {
	seg    *segment
	pos    int         // index in the cache's ents, notCached or forgotten (cache's mu)
	weight int64       // what it counts for while cached (cache's mu)
	used   atomic.Bool // used since the hand last passed it
}

const (
	notCached = -1
	forgotten = -2 // the segment is closed: it is never cached again
)

func newClockCache(max int64, evict func(*segment) bool) *clockCache {
	return &clockCache{max: max, evict: evict}
}

func (e *cacheEntry) init(s *segment) { e.seg, e.pos = s, notCached }

// touch marks a use. The bit is only written when it changes, so that uses of
// a busy segment do not keep writing the same cache line.
func (e *cacheEntry) touch() {
	if !e.used.Load() {
		e.used.Store(true)
	}
}

// setMax changes the bound, evicting what is above it and not in use,
// and returns the previous one.
func (c *clockCache) setMax(n int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.max
	c.max = max(n, 1)
	c.evictLocked()
	return old
}

// bound is the cache's bound.
func (c *clockCache) bound() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// count is how many segments are cached.
func (c *clockCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ents)
}

// weight is the total weight of the cached segments.
func (c *clockCache) weight() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// add caches e's segment with weight w, evicting others if that makes the
// total too large. It does nothing if the segment is cached already or was
// forgotten (closed while its caller was getting it ready).
func (c *clockCache) add(e *cacheEntry, w int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.pos != notCached {
		return
	}
	e.used.Store(true) // it was loaded to be used: spare it for one turn
	e.pos, e.weight = len(c.ents), w
	c.ents = append(c.ents, e)
	c.total += w
	c.evictLocked()
}

// remove takes e's segment out, as if the hand had evicted it: it may be
// cached again.
func (c *clockCache) remove(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.pos >= 0 {
		c.removeAtLocked(e.pos)
	}
}

// forget removes e's segment for good: it is being closed.
func (c *clockCache) forget(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.pos >= 0 {
		c.removeAtLocked(e.pos)
	}
	e.pos = forgotten
}

func (c *clockCache) removeAtLocked(i int) {
	gone, last := c.ents[i], len(c.ents)-1
	c.ents[i] = c.ents[last]
	c.ents[i].pos = i
	c.ents[last] = nil
	c.ents = c.ents[:last]
	c.total -= gone.weight
	gone.pos, gone.weight = notCached, 0
}

// evictLocked lets go of unused segments until the total is within max,
// giving each recently used one a second chance (its used bit is cleared on
// the first pass). It gives up after two full turns: everything left is in
// use.
func (c *clockCache) evictLocked() {
	for steps := 2 * len(c.ents); c.total > c.max && steps > 0; steps-- {
		if c.hand >= len(c.ents) {
			c.hand = 0
		}
		e := c.ents[c.hand]
		if e.used.Load() {
			e.used.Store(false)
			c.hand++
			continue
		}
		if !c.evict(e.seg) {
			c.hand++ // in use
			continue
		}
		c.removeAtLocked(c.hand) // the hand now points at the entry moved into the slot
	}
	c.over.Store(c.total > c.max)
}

// trim evicts what is over the bound and no longer in use. Users call it when
// done with a segment; while the bound holds it costs one atomic load.
func (c *clockCache) trim() {
	if !c.over.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked()
}
