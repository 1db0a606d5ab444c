package meta

import (
	"context"
	"errors"
)

// Large batches. etcd refuses a transaction with more than --max-txn-ops
// compares or writes (128 by default), or whose request is bigger than
// --max-request-bytes (1.5 MiB by default), and an admin request may carry
// hundreds of topics, quota entities or ACLs, or a few topics with large
// configs. The batch operations therefore commit in chunks that each fit
// one transaction: the chunk holds at most the items the operation limit
// allows, and ends early at the first item whose writes would take the
// request over the byte limit (that item starts the next chunk). An item
// too large for a transaction of its own fails alone with ErrTooLarge.
// What stays atomic is each item (a topic with its config overrides, one
// quota entity, one ACL): that is all Kafka promises too, since
// CreateTopics, AlterClientQuotas and CreateAcls report a result per item.
// A store failure part-way leaves the earlier chunks committed; the later
// items get the error, and retrying them is safe (creating an existing
// topic fails per topic, quota and ACL writes are idempotent).

// txnLimiter is a backend that bounds the operations of one transaction.
type txnLimiter interface{ txnOpsLimit() int }

// sizedTx is a transaction of a backend that bounds the bytes of one
// transaction: it can tell whether its commit would be refused as too
// large, and take back the writes made since a mark.
type sizedTx interface {
	// tooLarge returns an error wrapping ErrTooLarge if the commit would
	// be over the backend's request size limit.
	tooLarge() error
	// mark starts a new set of writes that rollback can take back.
	mark()
	rollback()
}

// writeIfFits runs write on tx and keeps its writes only if the
// transaction still fits in one request of the backend. If they do not
// fit it takes them back and returns the ErrTooLarge error; reads write
// made stay part of the transaction, which is harmless.
func writeIfFits(tx Tx, write func() error) error {
	st, ok := tx.(sizedTx)
	if !ok {
		return write()
	}
	st.mark()
	if err := write(); err != nil {
		return err
	}
	if err := st.tooLarge(); err != nil {
		st.rollback()
		return err
	}
	return nil
}

// updateChunks runs fn over each item i in [0, n) as fn(tx, i, i+1), in as
// few transactions as the backend's limits allow, where one item needs at
// most opsPerItem reads and at most opsPerItem writes. On a backend without
// limits (bbolt) there is one transaction. An item too large for a
// transaction of its own is passed to itemErr with its ErrTooLarge error,
// and the others go on; with itemErr nil it ends the batch there like a
// store failure. It returns how many items (from the start) were committed
// or failed alone before err, and returns once this store's snapshot
// includes the committed ones.
func (s *Store) updateChunks(ctx context.Context, n, opsPerItem int, fn func(tx Tx, lo, hi int) error, itemErr func(i int, err error)) (done int, err error) {
	size := max(n, 1)
	if l, ok := s.backend.(txnLimiter); ok {
		size = max(1, l.txnOpsLimit()/opsPerItem)
	}
	var last int64
	for done < n {
		lo, hi := done, min(done+size, n)
		var end int
		var alone error // the item at lo is too large on its own
		rev, uerr := s.backend.Update(ctx, func(tx Tx) error {
			end, alone = hi, nil // fn may run again after a conflict
			for i := lo; i < hi; i++ {
				err := writeIfFits(tx, func() error { return fn(tx, i, i+1) })
				switch {
				case errors.Is(err, ErrTooLarge):
					end = i
					if i == lo {
						alone = err
					}
					return nil // commit the items before i
				case err != nil:
					return err
				}
			}
			return nil
		})
		if uerr != nil {
			err = uerr
			break
		}
		last, done = max(last, rev), end
		if alone != nil {
			if itemErr == nil {
				err = alone
				break
			}
			itemErr(lo, alone)
			done++
		}
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
