package replica

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// awaitResult is what one Await returned.
type awaitResult struct {
	completed bool
	parked    time.Duration
}

// awaitAsync runs Await on its own goroutine, as a connection would.
func awaitAsync(ctx context.Context, q *DelayedQueue[int], keys []int, seen uint64, wait time.Duration, tryComplete func() bool) <-chan awaitResult {
	done := make(chan awaitResult, 1)
	go func() {
		c, p := q.Await(ctx, keys, seen, time.Now().Add(wait), tryComplete)
		done <- awaitResult{c, p}
	}()
	return done
}

// waitParked waits until n operations are parked in q.
func waitParked(t *testing.T, q *DelayedQueue[int], n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); q.parked.Load() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations parked, want %d", q.parked.Load(), n)
		}
	}
}

// assertEmpty checks that nothing is left watching in q.
func assertEmpty(t *testing.T, q *DelayedQueue[int]) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.watchers) != 0 || q.parked.Load() != 0 {
		t.Fatalf("left behind: %d keys watched, %d operations parked", len(q.watchers), q.parked.Load())
	}
}

func TestDelayedOperationCompletesOnlyWhenItsKeyIsNotifiedAndItsConditionHolds(t *testing.T) {
	q := NewDelayedQueue[int]()
	var tries, ready atomic.Int32
	done := awaitAsync(context.Background(), q, []int{1, 2}, q.Notifications(), time.Minute, func() bool {
		tries.Add(1)
		return ready.Load() == 1
	})
	waitParked(t, q, 1)
	q.Notify(3) // a key it does not watch
	time.Sleep(20 * time.Millisecond)
	if n := tries.Load(); n != 0 {
		t.Fatalf("tried %d times after a notification of another key", n)
	}
	q.Notify(2) // its key, condition not yet true: it waits on
	for tries.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("returned %+v before its condition held", r)
	case <-time.After(20 * time.Millisecond):
	}
	ready.Store(1)
	q.Notify(1)
	select {
	case r := <-done:
		if !r.completed {
			t.Fatal("not completed")
		}
		if r.parked <= 0 {
			t.Fatalf("parked %v, want the time it waited", r.parked)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a notification of its key with its condition true did not complete it")
	}
	assertEmpty(t, q)
}

func TestDelayedOperationExpiresAtItsDeadline(t *testing.T) {
	q := NewDelayedQueue[int]()
	const wait = 100 * time.Millisecond
	start := time.Now()
	completed, parked := q.Await(context.Background(), []int{1}, q.Notifications(), start.Add(wait), func() bool { return true })
	if completed {
		t.Fatal("completed without a notification")
	}
	if took := time.Since(start); took < wait || took > wait+5*time.Second {
		t.Fatalf("returned after %v, want %v", took, wait)
	}
	if parked < wait/2 {
		t.Fatalf("parked %v of a %v wait", parked, wait)
	}
	assertEmpty(t, q)
	if completed, _ := q.Await(context.Background(), []int{1}, q.Notifications(), time.Now(), func() bool { return true }); completed {
		t.Fatal("a deadline already passed completed")
	}
}

func TestDelayedOperationEndsWithItsContext(t *testing.T) {
	q := NewDelayedQueue[int]()
	ctx, cancel := context.WithCancel(context.Background())
	done := awaitAsync(ctx, q, []int{1}, q.Notifications(), time.Minute, func() bool { return true })
	waitParked(t, q, 1)
	cancel()
	select {
	case r := <-done:
		if r.completed {
			t.Fatal("completed by a cancellation")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled context did not end the wait")
	}
	assertEmpty(t, q)
}

// A change between the caller's look (which found nothing) and its park is
// not missed: the operation tries at once.
func TestDelayedOperationSeesANotificationBeforeItParked(t *testing.T) {
	q := NewDelayedQueue[int]()
	seen := q.Notifications()
	q.Notify(7) // before Await, with no one parked yet
	start := time.Now()
	completed, _ := q.Await(context.Background(), []int{7}, seen, start.Add(time.Minute), func() bool { return true })
	if !completed || time.Since(start) > 5*time.Second {
		t.Fatalf("completed %v after %v: the notification before parking was missed", completed, time.Since(start))
	}
	// With no notification since the look, it does not try at once.
	tried := false
	q.Await(context.Background(), []int{7}, q.Notifications(), time.Now().Add(10*time.Millisecond), func() bool { tried = true; return true })
	if tried {
		t.Fatal("tried with nothing notified since the look")
	}
	assertEmpty(t, q)
}

// Many operations on shared and separate keys (a request naming the same
// partition twice included) are all woken by their keys, and leave nothing
// behind: no watch entry, no goroutine, no timer firing later.
func TestManyDelayedOperationsWakeAndLeaveNothing(t *testing.T) {
	q := NewDelayedQueue[int]()
	const ops = 1000
	goroutines := runtime.NumGoroutine()
	var wg sync.WaitGroup
	var completed atomic.Int32
	var ready atomic.Bool
	for i := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := []int{0, 1 + i%10, 1 + i%10} // key 0 shared by all
			if c, _ := q.Await(context.Background(), keys, q.Notifications(), time.Now().Add(time.Minute), ready.Load); c {
				completed.Add(1)
			}
		}()
	}
	waitParked(t, q, ops)
	ready.Store(true)
	for k := 1; k <= 10; k++ {
		q.Notify(k)
	}
	wg.Wait()
	if n := completed.Load(); n != ops {
		t.Fatalf("%d of %d operations completed", n, ops)
	}
	assertEmpty(t, q)
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), goroutines)
		}
	}
	// Recycled operations carry no stale wake-up or timer: a fresh wait on
	// a notified key expires at its deadline.
	for range 100 {
		if c, _ := q.Await(context.Background(), []int{0}, q.Notifications(), time.Now().Add(time.Millisecond), func() bool { return true }); c {
			t.Fatal("a recycled operation completed without a notification")
		}
	}
}

// BenchmarkDelayedQueueParkAndWake: one operation parks, another goroutine
// notifies its key, and it completes — the cost of a long poll's wait.
func BenchmarkDelayedQueueParkAndWake(b *testing.B) {
	q := NewDelayedQueue[int]()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if q.parked.Load() > 0 {
				q.Notify(1)
			}
			runtime.Gosched()
		}
	}()
	keys := []int{1}
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := q.Await(context.Background(), keys, q.Notifications(), time.Now().Add(time.Minute), func() bool { return true }); !c {
			b.Fatal("not completed")
		}
	}
}

// BenchmarkDelayedQueueNotifyNoneWaiting is what every append pays when no
// request waits.
func BenchmarkDelayedQueueNotifyNoneWaiting(b *testing.B) {
	q := NewDelayedQueue[Key]()
	b.ReportAllocs()
	for b.Loop() {
		q.Notify(Key{Partition: 1})
	}
}

// A high watermark move (NotifyCommitted) completes what waits for
// committed records, an acks=all produce or a consumer's fetch, and passes
// by a follower's fetch (AwaitNewRecords), which only new records, a full
// Notify, can complete.
func TestNotifyCommittedPassesOperationsWaitingForNewRecords(t *testing.T) {
	q := NewDelayedQueue[int]()
	var followerTries atomic.Int32
	follower := make(chan bool, 1)
	go func() {
		completed, _ := q.AwaitNewRecords(context.Background(), []int{1}, q.Notifications(), time.Now().Add(time.Minute), func() bool {
			followerTries.Add(1)
			return true
		})
		follower <- completed
	}()
	produce := awaitAsync(context.Background(), q, []int{1}, q.Notifications(), time.Minute, func() bool { return true })
	waitParked(t, q, 2)

	q.NotifyCommitted(1)
	select {
	case r := <-produce:
		if !r.completed {
			t.Fatal("the produce waiting for the high watermark was not completed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NotifyCommitted did not wake the produce waiting for the high watermark")
	}
	time.Sleep(20 * time.Millisecond)
	if n := followerTries.Load(); n != 0 {
		t.Fatalf("the follower's fetch tried %d times on a high watermark move", n)
	}

	q.Notify(1)
	select {
	case completed := <-follower:
		if !completed {
			t.Fatal("the follower's fetch was not completed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("new records (Notify) did not wake the follower's fetch")
	}
	assertEmpty(t, q)
}

// A follower's fetch looks, finds nothing, and parks: a new-records
// notification between the look and the park makes it try at once (it
// must not sleep through the records), a high watermark move (its own,
// from the offset it brought) does not.
func TestAwaitNewRecordsRetriesAtOnceOnlyForMissedRecords(t *testing.T) {
	q := NewDelayedQueue[int]()
	try := func(notify func(int)) int32 {
		var tries atomic.Int32
		seen := q.RecordNotifications()
		notify(1)
		q.AwaitNewRecords(context.Background(), []int{1}, seen, time.Now().Add(30*time.Millisecond), func() bool {
			tries.Add(1)
			return false
		})
		return tries.Load()
	}
	if n := try(q.NotifyCommitted); n != 0 {
		t.Fatalf("tried %d times after a missed high watermark move", n)
	}
	if n := try(q.Notify); n != 1 {
		t.Fatalf("tried %d times after missed new records, want once at once", n)
	}
	assertEmpty(t, q)
}
