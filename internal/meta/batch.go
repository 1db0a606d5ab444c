package meta

import "context"

// Large batches. etcd refuses a transaction with more than --max-txn-ops
// compares or writes (128 by default), and an admin request may carry
// hundreds of topics, quota entities or ACLs. The batch operations therefore
// commit in chunks that each fit one transaction. What stays atomic is each
// item (a topic with its config overrides, one quota entity, one ACL): that
// is all Kafka promises too, since CreateTopics, AlterClientQuotas and
// CreateAcls report a result per item. A store failure part-way leaves the
// earlier chunks committed; the later items get the error, and retrying
// them is safe (creating an existing topic fails per topic, quota and ACL
// writes are idempotent).

// txnLimiter is a backend that bounds the operations of one transaction.
type txnLimiter interface{ txnOpsLimit() int }

// updateChunks runs fn over the items [lo, hi) of chunks of n items, each
// chunk in its own transaction, where one item needs at most opsPerItem
// reads and at most opsPerItem writes. On a backend without a limit (bbolt)
// there is one chunk. It returns how many items (from the start) were
// committed before err, and returns once this store's snapshot includes
// them.
func (s *Store) updateChunks(ctx context.Context, n, opsPerItem int, fn func(tx Tx, lo, hi int) error) (done int, err error) {
	size := max(n, 1)
	if l, ok := s.backend.(txnLimiter); ok {
		size = max(1, l.txnOpsLimit()/opsPerItem)
	}
	var last int64
	for lo := 0; lo < n || lo == 0 && n == 0; lo += size {
		hi := min(lo+size, n)
		var rev int64
		if rev, err = s.backend.Update(ctx, func(tx Tx) error { return fn(tx, lo, hi) }); err != nil {
			done = lo
			break
		}
		done, last = hi, max(last, rev)
	}
	if last != 0 {
		// What committed is in effect here before the caller answers,
		// even when a later chunk failed.
		if werr := s.waitFor(ctx, last); err == nil {
			err = werr
		}
	}
	return done, err
}
