package meta

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Read-your-writes across brokers. A broker's snapshot follows the shared
// store (etcd) through a watch, so it trails every other broker's writes by
// the watch delay: a topic created through broker A may be unknown to
// broker B for a moment. Sync closes that gap for the requests that need it
// (admin requests, see api.catchUp): it learns the store's current revision
// with a linearizable read and waits until the watch has applied at least
// that much. Produce and fetch never call it: the data path makes no store
// round trip.

// sharedBackend is a backend other brokers write too (etcd). bbolt has one
// writer, which waits for its own changes in Update, so it needs nothing.
type sharedBackend interface {
	// currentRev is the store's latest revision, read linearizably (so it
	// covers every write acknowledged to anyone before the call).
	currentRev(ctx context.Context) (int64, error)
	// requestProgress asks the watch to report the revision it has
	// delivered everything up to, even when nothing under our prefix
	// changed (etcd's revision also counts writes outside it).
	requestProgress()
	// syncTimeout bounds one Sync.
	syncTimeout() time.Duration
}

const (
	// firstProgressWait is how long Sync lets the watch catch up by
	// itself before asking for a progress report: the watch normally
	// delivers within a millisecond of the commit.
	firstProgressWait = 5 * time.Millisecond
	maxProgressWait   = 200 * time.Millisecond
)

// syncState remembers a failed Sync, so that while the store is
// unreachable every admin request does not wait out a full timeout before
// going on with the last known metadata.
type syncState struct {
	downUntil atomic.Int64 // unix nanoseconds
}

// Sync returns once this store's snapshot includes every change committed
// to the backend before the call. It fails with ErrUnavailable when the
// store does not answer in time (or did not answer a Sync shortly before);
// the caller then goes on with the snapshot it has.
func (s *Store) Sync(ctx context.Context) error {
	b, ok := s.backend.(sharedBackend)
	if !ok {
		return nil
	}
	if until := s.sync.downUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		return fmt.Errorf("%w: a catch-up with the metadata store failed moments ago", ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, b.syncTimeout())
	defer cancel()
	err := s.catchUp(ctx, b)
	switch {
	case errors.Is(err, ErrUnavailable):
		s.sync.downUntil.Store(time.Now().Add(b.syncTimeout()).UnixNano())
	case err == nil:
		s.sync.downUntil.Store(0)
	}
	return err
}

func (s *Store) catchUp(ctx context.Context, b sharedBackend) error {
	rev, err := b.currentRev(ctx)
	if err != nil {
		return err
	}
	for wait := firstProgressWait; ; wait = min(2*wait, maxProgressWait) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := s.waitFor(wctx, rev)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the metadata watch did not reach revision %d in time", ErrUnavailable, rev)
		}
		// Asked again on every round: etcd answers a progress request only
		// while the watch is synced, so one request can go unanswered.
		b.requestProgress()
	}
}
