package replica

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DelayedQueue holds operations that cannot complete yet — a fetch waiting
// for min_bytes, and with replication an acks=all produce waiting for the
// high watermark to pass its records — until something changes on a key
// they watch, their deadline passes or their context ends. It is what
// Kafka calls a purgatory: whoever changes a key (an append, a high
// watermark move, a deleted partition) notifies it, and each operation
// watching the key tries to complete.
//
// An operation waits on its caller's goroutine (a connection serves one
// request at a time), so parking costs no goroutine, and tries to complete
// there: a notifier never runs another request's work.
type DelayedQueue[K comparable] struct {
	// notified counts notifications, so that a caller who looked, found it
	// must wait, and only then parks can tell whether it missed one.
	notified atomic.Uint64
	// notifiedRecords counts the notifications that are not
	// NotifyCommitted, for operations only those complete.
	notifiedRecords atomic.Uint64
	// parked counts waiting operations; Notify skips the lock when none
	// waits, which is most appends.
	parked atomic.Int64

	mu       sync.Mutex
	watchers map[K]*watch[K] // first of the operations watching each key
	free     sync.Pool       // *delayed[K]
}

// delayed is one waiting operation; recycled through DelayedQueue.free.
type delayed[K comparable] struct {
	wake    chan struct{} // holds one wake-up; more coalesce
	timer   *time.Timer
	watches []watch[K]
	// newRecordsOnly is an operation that only new records (or a change
	// of leadership, a truncation) can complete: NotifyCommitted passes
	// it by (AwaitNewRecords).
	newRecordsOnly bool
}

// watch links an operation into the list of one key's watchers.
type watch[K comparable] struct {
	op         *delayed[K]
	key        K
	prev, next *watch[K]
}

// NewDelayedQueue returns an empty queue.
func NewDelayedQueue[K comparable]() *DelayedQueue[K] {
	return &DelayedQueue[K]{watchers: map[K]*watch[K]{}}
}

// Notifications is the count of notifications so far. Read it before
// looking at whether an operation can complete, and pass it to Await: a
// notification between the look and the park is then not missed.
func (q *DelayedQueue[K]) Notifications() uint64 { return q.notified.Load() }

// RecordNotifications is Notifications for AwaitNewRecords: the count of
// notifications other than NotifyCommitted.
func (q *DelayedQueue[K]) RecordNotifications() uint64 { return q.notifiedRecords.Load() }

// Notify tells the operations watching key that it changed: each tries to
// complete, on its own goroutine.
func (q *DelayedQueue[K]) Notify(key K) { q.notify(key, false) }

// NotifyCommitted tells the operations watching key that only what is
// committed there moved (the high watermark, the log start offset): a
// consumer's fetch, an acks=all produce or a DeleteRecords may now
// complete, a follower's fetch (AwaitNewRecords) may not. Each HW advance
// would otherwise wake the other followers' parked fetches, which read
// again and park again, on the leader's CPU in the middle of acks=all's
// round trip.
func (q *DelayedQueue[K]) NotifyCommitted(key K) { q.notify(key, true) }

func (q *DelayedQueue[K]) notify(key K, committedOnly bool) {
	// Counted before looking for watchers, and an operation counts itself
	// parked before reading notified: either this sees it parked, or it
	// sees this notification.
	q.notified.Add(1)
	if !committedOnly {
		q.notifiedRecords.Add(1)
	}
	if q.parked.Load() == 0 {
		return
	}
	q.mu.Lock()
	for w := q.watchers[key]; w != nil; w = w.next {
		if committedOnly && w.op.newRecordsOnly {
			continue
		}
		select {
		case w.op.wake <- struct{}{}:
		default: // already woken, not yet run
		}
	}
	q.mu.Unlock()
}

// Await parks an operation on keys until tryComplete reports that it
// completed (true), or deadline passes or ctx ends (false). tryComplete
// runs on the caller's goroutine: at once if anything was notified since
// seen (Notifications, read before the caller last looked), then after
// each notification of one of keys. parked is the time spent waiting, not
// trying, which request-time quotas do not charge.
func (q *DelayedQueue[K]) Await(ctx context.Context, keys []K, seen uint64, deadline time.Time, tryComplete func() bool) (completed bool, parked time.Duration) {
	return q.await(ctx, keys, seen, deadline, tryComplete, false)
}

// AwaitNewRecords is Await for an operation that only new records on its
// keys can complete, a follower's fetch: NotifyCommitted does not wake it,
// and seen is a RecordNotifications count (a follower's fetch that moved
// the high watermark does not read again at once for its own
// notification).
func (q *DelayedQueue[K]) AwaitNewRecords(ctx context.Context, keys []K, seen uint64, deadline time.Time, tryComplete func() bool) (completed bool, parked time.Duration) {
	return q.await(ctx, keys, seen, deadline, tryComplete, true)
}

func (q *DelayedQueue[K]) await(ctx context.Context, keys []K, seen uint64, deadline time.Time, tryComplete func() bool, newRecordsOnly bool) (completed bool, parked time.Duration) {
	if !time.Now().Before(deadline) || ctx.Err() != nil || len(keys) == 0 {
		return false, 0
	}
	op := q.park(keys, newRecordsOnly)
	defer q.unpark(op)
	counter := &q.notified
	if newRecordsOnly {
		counter = &q.notifiedRecords
	}
	if counter.Load() != seen && tryComplete() {
		return true, 0
	}
	op.timer.Reset(time.Until(deadline))
	for {
		from := time.Now()
		select {
		case <-op.wake:
			parked += time.Since(from)
			if tryComplete() {
				return true, parked
			}
		case <-op.timer.C:
			return false, parked + time.Since(from)
		case <-ctx.Done():
			return false, parked + time.Since(from)
		}
	}
}

// park takes an operation from the pool and makes it watch keys.
func (q *DelayedQueue[K]) park(keys []K, newRecordsOnly bool) *delayed[K] {
	op, _ := q.free.Get().(*delayed[K])
	if op == nil {
		op = &delayed[K]{wake: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
		op.timer.Stop()
	}
	op.newRecordsOnly = newRecordsOnly
	if cap(op.watches) < len(keys) {
		op.watches = make([]watch[K], len(keys))
	}
	op.watches = op.watches[:len(keys)]
	q.mu.Lock()
	for i, k := range keys {
		w := &op.watches[i]
		*w = watch[K]{op: op, key: k, next: q.watchers[k]}
		if w.next != nil {
			w.next.prev = w
		}
		q.watchers[k] = w
	}
	q.mu.Unlock()
	q.parked.Add(1)
	return op
}

// unpark removes op from its keys' watchers and returns it to the pool.
func (q *DelayedQueue[K]) unpark(op *delayed[K]) {
	q.mu.Lock()
	for i := range op.watches {
		w := &op.watches[i]
		switch {
		case w.prev != nil:
			w.prev.next = w.next
		case w.next != nil:
			q.watchers[w.key] = w.next
		default:
			delete(q.watchers, w.key) // no one watches the key: no entry left behind
		}
		if w.next != nil {
			w.next.prev = w.prev
		}
		*w = watch[K]{}
	}
	q.mu.Unlock()
	q.parked.Add(-1)
	op.timer.Stop()
	select {
	case <-op.wake: // a wake-up that came after the last try
	default:
	}
	q.free.Put(op)
}
