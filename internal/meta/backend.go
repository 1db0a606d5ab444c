// Package meta is kbroker's metadata: the model (topics and their
// partitions, config overrides, client quotas, ACLs, SCRAM credentials,
// live brokers, the producer-id counter), the key layout it is stored under
// (keys.go), and the store that keeps every broker's in-memory image in step
// with the backend (a bbolt file, or etcd for a cluster).
//
// One write path: every mutation is a Backend transaction. One read path:
// the hot path reads an immutable Snapshot through an atomic pointer, which
// the store replaces after each committed change it learns of, whichever
// broker made it; the new snapshot shares every sub-image the change did
// not touch with the old one (image.go).
package meta

import (
	"context"
	"errors"
)

// Change is one key written or deleted by a committed transaction.
type Change struct {
	Key     string
	Value   []byte // nil when Deleted
	Deleted bool
}

// Batch is the changes of one committed transaction and the store revision
// it produced. Revisions increase by at least one per transaction.
type Batch struct {
	Rev     int64
	Changes []Change
}

// Tx is the view a transaction function has of the backend. Reads see the
// transaction's own writes. A backend with optimistic concurrency (etcd)
// runs the function again when what it read changed before the commit (a
// key it got, a key created or changed under a prefix it listed; etcd.go
// says which conflicts are seen), up to a bound after which Update fails
// with ErrConflict; so the function must have no side effects beyond the Tx
// and must reset what it computes on each run.
type Tx interface {
	Get(key string) ([]byte, bool)
	// List returns every key with the prefix and its value.
	List(prefix string) map[string][]byte
	Put(key string, value []byte)
	Delete(key string)
}

// Backend is the durable key-value store under the metadata. Keys are
// '/'-separated paths (see keys.go).
type Backend interface {
	// Load returns every key and the revision the read was made at.
	Load(ctx context.Context) (map[string][]byte, int64, error)
	// Update runs fn in one atomic transaction and returns the revision it
	// committed at (0 if fn wrote nothing). An error from fn aborts it.
	Update(ctx context.Context, fn func(Tx) error) (int64, error)
	// Watch delivers, in order, every batch committed after rev until ctx
	// ends. If rev is too old to replay, it delivers ErrCompacted.
	Watch(ctx context.Context, rev int64) <-chan WatchEvent
	Close() error
}

// WatchEvent is a committed batch, or an error after which the watcher must
// reload (ErrCompacted) or retry.
type WatchEvent struct {
	Batch Batch
	Err   error
}

// ErrCompacted means a watch asked for history the backend no longer has;
// the watcher reloads everything.
var ErrCompacted = errors.New("meta: revision compacted")
