package meta

// Etcd is the cluster backend: every broker of a cluster keeps its metadata
// in one etcd, and learns of every other broker's writes through a watch.
//
// Key layout. Each metadata path of keys.go is stored, unchanged, under the
// configured prefix (default "/kbroker/"), with the same JSON values the
// bbolt backend stores, so `etcdctl get --prefix /kbroker/` reads like the
// bbolt file:
//
//	/kbroker/cluster/id
//	/kbroker/topics/<topic>
//	/kbroker/config/topics/<topic>
//	/kbroker/config/brokers/<id> and /kbroker/config/brokers/<default>
//	/kbroker/config/users/<user>[/clients/<client>], config/clients/…, config/ips/…
//	/kbroker/acls/…, /kbroker/scram/…, /kbroker/producer_ids/next
//
// Nothing outside the prefix is read or written, so several kbroker clusters
// (or other programs) can share one etcd under different prefixes.
//
// Revisions. The store's revision is etcd's own revision: Load returns the
// header revision of its range read, Update the revision of its committed
// Txn, and each watched Batch carries the ModRevision of its events (all
// events of one etcd Txn share one revision, so one Update is one Batch).
// etcd's revision counts writes to the whole etcd, not only this prefix, so
// store revisions increase by one or more per transaction, as the Backend
// contract allows. A watch resumes from any revision etcd has not compacted;
// from a compacted one it reports ErrCompacted and the store reloads.
//
// Concurrency. Update is optimistic: fn runs against reads pinned at one
// revision R, and its writes commit in one Txn whose If requires that every
// key fn read is unchanged since R (ModRevision equal, or CreateRevision 0
// for a key that was absent) and that nothing under a listed prefix was
// created or changed after R. If another writer got there first, fn runs
// again on fresh reads, so two admins racing on one key never lose an update.
//
// A List adds one compare for its whole range (nothing under it created or
// changed after R); a listed key fn then writes gets its own compare, so a
// concurrent deletion of it is caught too. A concurrent deletion of a listed
// key fn only read does not make it run again: no etcd compare sees a
// range's deletions.
//
// Limits. etcd bounds a Txn to --max-txn-ops operations in each of If and
// Then (128 by default; MaxTxnOps), and its request to --max-request-bytes
// (1.5 MiB by default; MaxRequestBytes). A single Update that reads more
// keys than that (one compare each) or writes more fails with a clear
// error; one whose request would be too large fails with ErrTooLarge
// before anything is sent. The store's batch operations (CreateTopics,
// UpdateQuotas, CreateACLs, DeleteACLs) stay under both by committing a
// large batch in several transactions (batch.go).
//
// Read-your-writes (sync.go): currentRev reads the revision linearizably,
// and the watch passes on etcd's progress notifications as empty batches, so
// a store whose last revisions were written outside the prefix still learns
// that it has everything up to them.

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrUnavailable means the metadata store could not be reached in time (etcd
// down, partitioned, or without a leader). It is retriable: the API layer
// answers with a retriable Kafka error and the client tries again.
var ErrUnavailable = errors.New("meta: metadata store unavailable")

// ErrConflict means an Update kept losing races with other writers until its
// retries ran out. It is retriable, like ErrUnavailable.
var ErrConflict = errors.New("meta: metadata update kept conflicting with concurrent updates")

// ErrTooLarge means a metadata change does not fit in one request of the
// metadata store (etcd's --max-request-bytes). Retrying does not help: the
// change itself (a topic's configs, say) must shrink.
var ErrTooLarge = errors.New("meta: metadata change too large for one etcd request")

// EtcdOptions configures OpenEtcd. Zero values take the defaults.
type EtcdOptions struct {
	Endpoints          []string
	Prefix             string // default "/kbroker/"; a missing trailing "/" is added
	Username, Password string
	TLS                *tls.Config
	// DialTimeout bounds connecting (default 5s).
	DialTimeout time.Duration
	// RequestTimeout bounds each etcd call when the caller's context allows
	// longer (default 5s), so an unreachable etcd gives ErrUnavailable
	// instead of a call that waits for the connection forever.
	RequestTimeout time.Duration
	// MaxTxnOps is etcd's --max-txn-ops (default 128, etcd's default): the
	// store's batch operations split their writes to stay under it.
	MaxTxnOps int
	// MaxRequestBytes is etcd's --max-request-bytes (default 1.5 MiB,
	// etcd's default): the batch operations split their writes to stay
	// under it, and a change too large alone fails with ErrTooLarge.
	MaxRequestBytes int
}

const (
	defaultEtcdPrefix  = "/kbroker/"
	defaultEtcdTimeout = 5 * time.Second

	// updateAttempts bounds how often Update re-runs fn after losing a race.
	updateAttempts = 32
	// conflictBackoff and maxConflictBackoff shape the jittered wait between
	// attempts, so racing writers spread out instead of colliding again.
	conflictBackoff    = 2 * time.Millisecond
	maxConflictBackoff = 100 * time.Millisecond

	// loadPage is how many keys one range read of Load fetches.
	loadPage = 2000

	// defaultMaxTxnOps is etcd's own default --max-txn-ops.
	defaultMaxTxnOps = 128
	// defaultMaxRequestBytes is etcd's own default --max-request-bytes.
	defaultMaxRequestBytes = 1536 * 1024

	// etcd checks the size of the encoded raft request that carries a Txn.
	// requestEnvelopeBytes bounds what that request adds to the Txn besides
	// the etcd user name (header id, auth revision, field framing), and
	// opFramingBytes what protobuf adds to one compare or write besides its
	// key, range end and value (tags, lengths, compare target and result).
	requestEnvelopeBytes = 64
	opFramingBytes       = 40
	// grpcOverheadBytes is what etcd's gRPC server allows a message above
	// --max-request-bytes (etcd's grpcOverheadBytes), so the client may send
	// that much too.
	grpcOverheadBytes = 512 * 1024
)

// Etcd is the etcd Backend. It is safe for concurrent use.
type Etcd struct {
	cli        *clientv3.Client
	prefix     string
	endpoints  string // for error messages
	reqTimeout time.Duration
	maxTxnOps  int
	maxReqSize int // etcd's --max-request-bytes
	username   string
}

// OpenEtcd connects to etcd and checks, within ctx, that it answers a read
// of the prefix (so a wrong address or bad credentials fail here, clearly).
func OpenEtcd(ctx context.Context, opts EtcdOptions) (*Etcd, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("meta: etcd needs at least one endpoint")
	}
	prefix := cmp.Or(opts.Prefix, defaultEtcdPrefix)
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	dialTimeout := cmp.Or(opts.DialTimeout, defaultEtcdTimeout)
	maxReqSize := cmp.Or(opts.MaxRequestBytes, defaultMaxRequestBytes)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            opts.Endpoints,
		Username:             opts.Username,
		Password:             opts.Password,
		TLS:                  opts.TLS,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(), // failures reach callers as errors
		// The client's own default (2 MiB) would refuse a request that an
		// etcd with a larger --max-request-bytes accepts.
		MaxCallSendMsgSize: maxReqSize + grpcOverheadBytes,
		DialOptions: []grpc.DialOption{
			// gRPC's default reconnect backoff grows to two minutes; brokers
			// should notice a returning etcd within seconds.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
				MinConnectTimeout: dialTimeout,
			}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("meta: connecting to etcd at %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	e := &Etcd{
		cli:        cli,
		prefix:     prefix,
		endpoints:  strings.Join(opts.Endpoints, ","),
		reqTimeout: cmp.Or(opts.RequestTimeout, defaultEtcdTimeout),
		maxTxnOps:  cmp.Or(opts.MaxTxnOps, defaultMaxTxnOps),
		maxReqSize: maxReqSize,
		username:   opts.Username,
	}
	// The first read also waits for the connection, so it gets the dial
	// budget when that is the longer one: a broker starting next to a busy
	// etcd should not give up after one request timeout.
	budget := max(e.reqTimeout, dialTimeout)
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if _, err := cli.Get(cctx, prefix+keyClusterID, clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if !isUnavailable(err) || ctx.Err() != nil {
			return nil, e.fail(ctx, "opening metadata store", err)
		}
		hint := ""
		if opts.TLS != nil {
			hint = " (etcd is reached over TLS: check metadata.etcd.ssl.*; the trust store must hold the CA of etcd's certificate)"
		}
		return nil, fmt.Errorf("opening metadata store: %w: etcd at %s did not answer within %v: %v%s", ErrUnavailable, e.endpoints, budget, err, hint)
	}
	return e, nil
}

// Client is the etcd client, for the cluster parts that use etcd directly
// (broker leases, controller election). What they write under the prefix
// reaches every store through the watch like an Update's writes (a
// lease-bound broker registration, say), without Update's conflict checks.
func (e *Etcd) Client() *clientv3.Client { return e.cli }

// Prefix is the key prefix everything of this cluster lives under.
func (e *Etcd) Prefix() string { return e.prefix }

func (e *Etcd) Close() error { return e.cli.Close() }

// txnOpsLimit is the most operations one Txn may hold in its If or Then.
func (e *Etcd) txnOpsLimit() int { return e.maxTxnOps }

// currentRev reads etcd's current revision. A Get is linearizable unless
// asked otherwise, so the revision covers every write acknowledged before.
func (e *Etcd) currentRev(ctx context.Context) (int64, error) {
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	resp, err := e.cli.Get(cctx, e.prefix+keyClusterID, clientv3.WithCountOnly())
	if err != nil {
		return 0, e.fail(ctx, "reading the metadata revision", err)
	}
	return resp.Header.Revision, nil
}

// requestProgress asks etcd for a progress notification on the watch
// stream of Watch: the client keys streams by the request's gRPC metadata,
// which must therefore be WithRequireLeader's, as in Watch.
func (e *Etcd) requestProgress() {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), e.reqTimeout)
	defer cancel()
	e.cli.RequestProgress(ctx)
}

func (e *Etcd) syncTimeout() time.Duration { return e.reqTimeout }

// callCtx bounds one etcd call by RequestTimeout (or the caller's earlier
// deadline).
func (e *Etcd) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.reqTimeout)
}

// fail turns an etcd error into the store's: ErrUnavailable when etcd did not
// answer (in time), the caller's context error when the caller gave up, and
// otherwise the etcd error itself (auth, request too large, …), which no
// retry will fix.
func (e *Etcd) fail(ctx context.Context, what string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("%s: the transaction has more operations than etcd's --max-txn-ops allows: %w", what, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		// The size check of Update passed, so etcd's limit is below
		// metadata.etcd.max.request.bytes.
		return fmt.Errorf("%s: %w: etcd refused the request as larger than its --max-request-bytes (check metadata.etcd.max.request.bytes): %v", what, ErrTooLarge, err)
	case isUnavailable(err) && ctx.Err() != nil:
		return fmt.Errorf("%s: %w: etcd at %s did not answer before the request's deadline: %w", what, ErrUnavailable, e.endpoints, ctx.Err())
	case isUnavailable(err):
		return fmt.Errorf("%s: %w: etcd at %s did not answer within %v: %v", what, ErrUnavailable, e.endpoints, e.reqTimeout, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return fmt.Errorf("%s: etcd: %w", what, err)
}

func isUnavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return true
	}
	code := codes.OK
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if s, ok := status.FromError(err); ok {
		code = s.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return false
}

// Load reads every key under the prefix at one revision, in pages.
func (e *Etcd) Load(ctx context.Context) (map[string][]byte, int64, error) {
	var err error
	for range 3 { // a page's revision can be compacted under a long load; start over
		var out map[string][]byte
		var rev int64
		if out, rev, err = e.load(ctx); err == nil {
			return out, rev, nil
		}
		if !errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
	}
	return nil, 0, e.fail(ctx, "loading metadata", err)
}

func (e *Etcd) load(ctx context.Context) (map[string][]byte, int64, error) {
	out := map[string][]byte{}
	end := clientv3.GetPrefixRangeEnd(e.prefix)
	from := e.prefix
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		cctx, cancel := e.callCtx(ctx)
		resp, err := e.cli.Get(cctx, from, opts...)
		cancel()
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			out[string(kv.Key[len(e.prefix):])] = kv.Value
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Update runs fn optimistically and commits with compare-and-swap; see the
// file comment. It returns ErrUnavailable if etcd does not answer, and
// ErrConflict if fn lost the race updateAttempts times. A commit whose
// answer was lost (ErrUnavailable after the Txn was sent) may have applied:
// a caller retrying re-reads, so a read-modify-write is never applied twice
// on top of itself.
func (e *Etcd) Update(ctx context.Context, fn func(Tx) error) (int64, error) {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t := &etcdTx{e: e, ctx: ctx, base: map[string]etcdKV{}, writes: map[string]etcdWrite{}}
		fnErr := fn(t)
		switch {
		case errors.Is(t.err, errSnapshotCompacted):
			// R was compacted while fn read; run again on a newer snapshot.
		case t.err != nil:
			// fn saw missing values for reads that failed; whatever it
			// decided is void.
			return 0, t.err
		case fnErr != nil:
			return 0, fnErr
		default:
			ops := t.ops()
			if len(ops) == 0 {
				return 0, nil
			}
			if err := t.tooLarge(); err != nil {
				return 0, err
			}
			cctx, cancel := e.callCtx(ctx)
			resp, err := e.cli.Txn(cctx).If(t.cmps...).Then(ops...).Commit()
			cancel()
			if err != nil {
				return 0, e.fail(ctx, "committing metadata", err)
			}
			if resp.Succeeded {
				return resp.Header.Revision, nil
			}
		}
		if attempt == updateAttempts {
			return 0, fmt.Errorf("%w (%d attempts)", ErrConflict, attempt)
		}
		wait := rand.N(min(maxConflictBackoff, conflictBackoff<<attempt))
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

var errSnapshotCompacted = errors.New("meta: transaction snapshot compacted")

// etcdTx is one attempt of an Update: reads pinned at rev and cached, writes
// buffered in order, and the compares that make the commit conditional.
type etcdTx struct {
	e   *Etcd
	ctx context.Context
	rev int64 // the snapshot revision R; 0 until the first read

	base   map[string]etcdKV // keys as of rev
	listed []string          // prefixes read whole at rev
	cmps   []clientv3.Cmp
	writes map[string]etcdWrite
	order  []string // written keys, first write first
	err    error

	// undo, once mark was called, has what each change of base and
	// writes since then replaced, for rollback (batch.go); marked has the
	// lengths of the lists rollback truncates.
	undo   []etcdUndo
	marked etcdMark
}

type etcdUndo struct {
	key   string
	base  bool // an entry of base, else of writes
	kv    etcdKV
	write etcdWrite
	had   bool // the entry was there before
}

type etcdMark struct{ cmps, listed, order int }

type etcdKV struct {
	value  []byte
	exists bool
	// modRev is set for a key read by List without its own compare; one
	// is added if the key is written.
	modRev int64
}

type etcdWrite struct {
	value   []byte
	deleted bool
}

// get reads from etcd at the snapshot revision, fixing it on the first read.
func (t *etcdTx) get(key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
	if t.err != nil {
		return nil
	}
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	cctx, cancel := t.e.callCtx(t.ctx)
	defer cancel()
	resp, err := t.e.cli.Get(cctx, t.e.prefix+key, opts...)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		t.err = errSnapshotCompacted
		return nil
	case err != nil:
		t.err = t.e.fail(t.ctx, "reading metadata", err)
		return nil
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp
}

// record remembers key as read at rev and makes the commit depend on it.
func (t *etcdTx) record(key string, kv *mvccpb.KeyValue) {
	full := t.e.prefix + key
	if kv == nil {
		t.setBase(key, etcdKV{})
		t.cmps = append(t.cmps, clientv3.Compare(clientv3.CreateRevision(full), "=", 0))
		return
	}
	t.setBase(key, etcdKV{value: kv.Value, exists: true})
	t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(full), "=", kv.ModRevision))
}

func (t *etcdTx) lookup(key string) etcdKV {
	if kv, ok := t.base[key]; ok {
		return kv
	}
	for _, p := range t.listed {
		if strings.HasPrefix(key, p) {
			// The listed range's compare already covers its creation.
			t.setBase(key, etcdKV{})
			return etcdKV{}
		}
	}
	if len(t.e.prefix)+len(key) > t.e.maxReqSize {
		// etcd never stored a key too long for a request, and the read
		// itself would be refused: the key is absent, and writing it fails
		// with ErrTooLarge.
		t.setBase(key, etcdKV{})
		return etcdKV{}
	}
	resp := t.get(key)
	if resp == nil {
		return etcdKV{}
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	t.record(key, kv)
	return t.base[key]
}

func (t *etcdTx) Get(key string) ([]byte, bool) {
	if w, ok := t.writes[key]; ok {
		return clone(w.value), !w.deleted
	}
	kv := t.lookup(key)
	return clone(kv.value), kv.exists
}

func (t *etcdTx) List(prefix string) map[string][]byte {
	if !t.isListed(prefix) {
		if resp := t.get(prefix, clientv3.WithPrefix()); resp != nil {
			for _, kv := range resp.Kvs {
				key := string(kv.Key[len(t.e.prefix):])
				if _, seen := t.base[key]; !seen {
					t.setBase(key, etcdKV{value: kv.Value, exists: true, modRev: kv.ModRevision})
				}
			}
			// Catches keys created or changed under the prefix; write adds
			// a compare for each listed key written (see the file comment).
			t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(t.e.prefix+prefix), "<", t.rev+1).WithPrefix())
			t.listed = append(t.listed, prefix)
		}
	}
	out := map[string][]byte{}
	for k, kv := range t.base {
		if kv.exists && strings.HasPrefix(k, prefix) {
			out[k] = clone(kv.value)
		}
	}
	for k, w := range t.writes {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if w.deleted {
			delete(out, k)
		} else {
			out[k] = clone(w.value)
		}
	}
	return out
}

func (t *etcdTx) isListed(prefix string) bool {
	for _, p := range t.listed {
		if strings.HasPrefix(prefix, p) {
			return true
		}
	}
	return false
}

func (t *etcdTx) Put(key string, value []byte) {
	t.write(key, etcdWrite{value: clone(value)})
}

// Delete of a key that does not exist writes nothing, as in bbolt; knowing
// that needs a read, so the commit depends on the key's absence too.
func (t *etcdTx) Delete(key string) {
	if _, ok := t.Get(key); !ok {
		return
	}
	t.lookup(key) // ops() needs to know whether the key existed before
	t.write(key, etcdWrite{deleted: true})
}

func (t *etcdTx) write(key string, w etcdWrite) {
	if kv := t.base[key]; kv.modRev != 0 {
		t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(t.e.prefix+key), "=", kv.modRev))
		kv.modRev = 0
		t.setBase(key, kv)
	}
	prev, had := t.writes[key]
	if !had {
		t.order = append(t.order, key)
	}
	if t.undo != nil {
		t.undo = append(t.undo, etcdUndo{key: key, write: prev, had: had})
	}
	t.writes[key] = w
}

// setBase caches what key was at the snapshot revision.
func (t *etcdTx) setBase(key string, kv etcdKV) {
	if t.undo != nil {
		prev, had := t.base[key]
		t.undo = append(t.undo, etcdUndo{key: key, base: true, kv: prev, had: had})
	}
	t.base[key] = kv
}

func (t *etcdTx) mark() {
	t.undo = []etcdUndo{}
	t.marked = etcdMark{cmps: len(t.cmps), listed: len(t.listed), order: len(t.order)}
}

// rollback takes back everything since the mark: writes, and reads with
// their compares, which would otherwise count against the request size.
func (t *etcdTx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		switch u := t.undo[i]; {
		case u.base && u.had:
			t.base[u.key] = u.kv
		case u.base:
			delete(t.base, u.key)
		case u.had:
			t.writes[u.key] = u.write
		default:
			delete(t.writes, u.key)
		}
	}
	t.cmps, t.listed, t.order = t.cmps[:t.marked.cmps], t.listed[:t.marked.listed], t.order[:t.marked.order]
	t.undo = nil
}

// tooLarge reports, with ErrTooLarge, a commit whose request would be over
// etcd's --max-request-bytes. The size is an upper bound of what etcd
// measures (the encoded raft request), from the keys, range ends and
// values of the compares and writes plus their protobuf framing; a
// deletion of a key that does not exist is counted though it is not sent.
func (t *etcdTx) tooLarge() error {
	n := requestEnvelopeBytes + len(t.e.username)
	for i := range t.cmps {
		c := t.cmps[i].GetCompare()
		n += opFramingBytes + len(c.Key) + len(c.RangeEnd) + len(c.GetValue())
	}
	for _, key := range t.order {
		n += opFramingBytes + len(t.e.prefix) + len(key) + len(t.writes[key].value)
	}
	if n > t.e.maxReqSize {
		return fmt.Errorf("%w: the change needs about %d bytes and etcd's --max-request-bytes (metadata.etcd.max.request.bytes) is %d", ErrTooLarge, n, t.e.maxReqSize)
	}
	return nil
}

// ops is the Then of the commit: each written key's final state, once (etcd
// rejects a Txn that touches a key twice), in first-write order.
func (t *etcdTx) ops() []clientv3.Op {
	var ops []clientv3.Op
	for _, key := range t.order {
		w := t.writes[key]
		switch {
		case !w.deleted:
			ops = append(ops, clientv3.OpPut(t.e.prefix+key, string(w.value)))
		case t.base[key].exists:
			ops = append(ops, clientv3.OpDelete(t.e.prefix+key))
		}
	}
	return ops
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Watch follows the prefix from rev+1. etcd's client resumes a broken watch
// stream by itself (from the last revision it saw, kept fresh by progress
// notifications), so an etcd outage shows as a pause, not an error. A
// progress notification is passed on as a Batch without changes: everything
// up to its revision has been delivered (Store.Sync waits for that). The
// channel ends with an error event only when etcd refuses the watch: a
// compacted revision (ErrCompacted), lost leader, or auth failure.
func (e *Etcd) Watch(ctx context.Context, rev int64) <-chan WatchEvent {
	out := make(chan WatchEvent, 64)
	go func() {
		defer close(out)
		send := func(ev WatchEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		defer cancel()
		wch := e.cli.Watch(wctx, e.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
		for resp := range wch {
			if resp.CompactRevision != 0 {
				send(WatchEvent{Err: fmt.Errorf("%w: etcd keeps revisions from %d, asked from %d", ErrCompacted, resp.CompactRevision, rev+1)})
				return
			}
			if err := resp.Err(); err != nil {
				send(WatchEvent{Err: e.fail(ctx, "watching metadata", err)})
				return
			}
			if resp.IsProgressNotify() {
				if !send(WatchEvent{Batch: Batch{Rev: resp.Header.Revision}}) {
					return
				}
				continue
			}
			for _, b := range e.batches(resp.Events) {
				if !send(WatchEvent{Batch: b}) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(WatchEvent{Err: fmt.Errorf("watching metadata: %w: etcd watch ended", ErrUnavailable)})
		}
	}()
	return out
}

// batches groups watch events by revision: one etcd Txn is one Batch.
func (e *Etcd) batches(events []*clientv3.Event) []Batch {
	var out []Batch
	for _, ev := range events {
		rev := ev.Kv.ModRevision
		if len(out) == 0 || out[len(out)-1].Rev != rev {
			out = append(out, Batch{Rev: rev})
		}
		c := Change{Key: string(ev.Kv.Key[len(e.prefix):])}
		if ev.Type == mvccpb.DELETE {
			c.Deleted = true
		} else {
			c.Value = ev.Kv.Value
		}
		b := &out[len(out)-1]
		b.Changes = append(b.Changes, c)
	}
	return out
}
