package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"kbroker/internal/meta"
)

// controllerPrefix is where the election keys live, under the store prefix.
const controllerPrefix = "controller/"

// Member is a broker's membership of an etcd cluster: its lease-bound
// registration, its campaign for controller, and what it observes of the
// election.
type Member struct {
	cli     *clientv3.Client
	prefix  string
	store   *meta.Store
	ttl     int // lease TTL in seconds
	timeout time.Duration
	log     *slog.Logger

	controller atomic.Int32
	// controllerListeners are called on every change of controller
	// (OnControllerChange).
	listenersMu         sync.Mutex
	controllerListeners []func(id int32, rev int64)
	// reg is the registration Join was given; what is written is it with
	// the marks below.
	reg meta.Broker
	// shuttingDown is set by BeginControlledShutdown: a registration
	// written again after a lost lease keeps the mark, or the controller
	// would put the stopping broker back in ISRs and leaderships.
	shuttingDown atomic.Bool
	// uncleanPending: this broker's registration says its previous run
	// shut down uncleanly and the controller has not yet cleared that
	// (ClearUncleanShutdown), which it does once it has taken the broker
	// out of every ISR and ELR. A registration written again after a lost
	// lease keeps the mark until then, or the controller would never prune.
	uncleanPending atomic.Bool
	// epoch is the broker epoch of the latest registration written.
	epoch atomic.Int64

	cancel  context.CancelFunc
	stopped chan struct{}
}

// MemberOptions configures NewMember.
type MemberOptions struct {
	// Prefix is the store's etcd prefix (meta.Etcd.Prefix).
	Prefix string
	// TTL is the registration lease's lifetime.
	TTL time.Duration
	// Timeout bounds each etcd call made while joining.
	Timeout time.Duration
	Logger  *slog.Logger
}

// NewMember returns the membership of one broker of the cluster in cli.
// Nothing happens in etcd until Join.
func NewMember(cli *clientv3.Client, store *meta.Store, opts MemberOptions) *Member {
	ttl := int((opts.TTL + time.Second - 1) / time.Second)
	m := &Member{cli: cli, prefix: opts.Prefix, store: store, ttl: max(ttl, 1),
		timeout: max(opts.Timeout, time.Second), log: opts.Logger}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.controller.Store(-1)
	m.uncleanPending.Store(true) // nothing is known to be clean before Join
	return m
}

// Controller is the id of the elected controller, -1 while none is known.
func (m *Member) Controller() int32 { return m.controller.Load() }

// OnControllerChange registers fn to be called, on the goroutine that
// observes the election, each time the controller changes: id is the new
// controller (-1: none known) and rev the etcd revision of the election
// change that made it so. That change is under the store's prefix, so once
// the store has applied rev its snapshot also lacks the brokers whose
// leases ended with the old controller's campaign key (a broker's
// registration and its campaign share its lease). A new controller runs
// its first election pass from here, at once: the change of the live
// brokers alone comes too early, often before this broker knows it won.
// fn must not block.
func (m *Member) OnControllerChange(fn func(id int32, rev int64)) {
	m.listenersMu.Lock()
	m.controllerListeners = append(m.controllerListeners, fn)
	m.listenersMu.Unlock()
}

// setController records the controller observed at rev and tells the
// listeners when it changed.
func (m *Member) setController(id int32, rev int64) {
	if old := m.controller.Swap(id); old == id {
		return
	}
	m.log.Info("controller changed", "controller", id)
	m.listenersMu.Lock()
	listeners := m.controllerListeners
	m.listenersMu.Unlock()
	for _, fn := range listeners {
		fn(id, rev)
	}
}

// Join registers reg, waits until this broker's own store lists it, and
// then keeps the registration alive (re-registering after a lost lease) and
// campaigns for controller until Close.
//
// A registration marked UncleanShutdown makes Join wait, at most one lease
// TTL and one request timeout, until the controller has cleared the mark:
// until then the partition records may still name this broker a leader
// or in-sync replica on the strength of records it may have lost, and it
// must not serve them (Kafka's controller keeps such a broker fenced
// until it has processed its registration).
func (m *Member) Join(ctx context.Context, reg meta.Broker) error {
	m.reg = reg
	m.uncleanPending.Store(reg.UncleanShutdown)
	session, err := m.register(ctx, reg.ID, m.registration())
	if err != nil {
		return err
	}
	if reg.UncleanShutdown {
		// Registered only now: before, the store could still hold the
		// registration of this broker's previous run.
		m.store.OnChange(func(ev meta.Event) { m.noteUncleanCleared(ev.Cur) })
		m.noteUncleanCleared(m.store.Snapshot())
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel, m.stopped = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.observe(runCtx) }()
	go func() { defer wg.Done(); m.keep(runCtx, session, reg.ID) }()
	go func() { wg.Wait(); close(m.stopped) }()
	if reg.UncleanShutdown {
		m.awaitUncleanCleared(ctx)
	}
	// Report a controller from the start when one is already elected (or
	// this broker wins at once), so the first Metadata answers name it.
	deadline := time.Now().Add(m.timeout)
	for m.Controller() < 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// ErrDuplicateBroker means another live broker is registered with this
// broker's node.id.
var ErrDuplicateBroker = errors.New("cluster: node.id already registered by a live broker")

// register takes a new lease, writes the registration under it, and waits
// for the store to see it.
func (m *Member) register(ctx context.Context, id int32, reg meta.Broker) (*concurrency.Session, error) {
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	grant, err := m.cli.Grant(cctx, int64(m.ttl))
	if err != nil {
		return nil, fmt.Errorf("cluster: taking a registration lease: %w: %v", meta.ErrUnavailable, err)
	}
	// The session keeps the lease alive from here on, with a context that
	// lives as long as the lease should (keepalive stops with it).
	session, err := concurrency.NewSession(m.cli, concurrency.WithLease(grant.ID), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, fmt.Errorf("cluster: keeping the registration lease alive: %w", err)
	}
	rev, err := m.claim(ctx, id, reg, grant.ID)
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, m.timeout)
		err = m.store.WaitFor(wctx, rev)
		cancel()
		if err != nil {
			err = fmt.Errorf("cluster: registering broker %d: %w: %v", id, meta.ErrUnavailable, err)
		}
	}
	if err != nil {
		m.revoke(session)
		return nil, err
	}
	m.log.Info("registered in the cluster", "node.id", id, "broker.epoch", m.epoch.Load(), "lease", fmt.Sprintf("%x", grant.ID), "ttl", m.ttl)
	return session, nil
}

// claim writes the registration under lease if no other holds the id, and
// returns the revision it was written at. Kafka refuses a broker whose
// node.id a live broker has registered (ZooKeeper's "node already exists",
// KRaft's DUPLICATE_BROKER_REGISTRATION). A registration left by a broker
// that crashed lives on until its lease expires, so the id's holder gets one
// lease TTL to vanish: a restarted broker waits out its former self, while
// a live holder keeps its lease alive and the newcomer fails.
//
// The registration written carries its broker epoch (meta.Broker.Epoch):
// one past the revision of the read that found the id unregistered. A
// previous registration of the id was created, and deleted, at or before
// that revision, so every registration's epoch is larger than the one
// before, and at most its own create revision.
func (m *Member) claim(ctx context.Context, id int32, reg meta.Broker, lease clientv3.LeaseID) (int64, error) {
	key := m.prefix + meta.BrokerKey(id)
	var deadline time.Time
	for {
		cctx, cancel := context.WithTimeout(ctx, m.timeout)
		got, err := m.cli.Get(cctx, key)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("cluster: registering broker %d: %w: %v", id, meta.ErrUnavailable, err)
		}
		kvs := got.Kvs
		if len(kvs) == 0 {
			reg.Epoch = got.Header.Revision + 1
			value, err := json.Marshal(reg)
			if err != nil {
				return 0, err
			}
			cctx, cancel := context.WithTimeout(ctx, m.timeout)
			resp, err := m.cli.Txn(cctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, string(value), clientv3.WithLease(lease))).
				Commit()
			cancel()
			if err != nil {
				return 0, fmt.Errorf("cluster: registering broker %d: %w: %v", id, meta.ErrUnavailable, err)
			}
			if resp.Succeeded {
				m.epoch.Store(reg.Epoch)
				return resp.Header.Revision, nil
			}
			continue // registered by another between the read and the write: read it
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(m.holderTTL(ctx, clientv3.LeaseID(kvs[0].Lease)) + 500*time.Millisecond)
			m.log.Warn("node.id is registered already; waiting one lease TTL for the registration to expire", "node.id", id, "until", deadline)
		}
		if time.Now().After(deadline) {
			var holder meta.Broker
			json.Unmarshal(kvs[0].Value, &holder)
			return 0, fmt.Errorf("%w: broker %d at %s has kept its registration alive in etcd (%s); every broker needs its own node.id",
				ErrDuplicateBroker, id, endpoints(holder), key)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("cluster: registering broker %d: %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// holderTTL is the TTL the id's current holder registered with (it may
// differ from ours), or ours when etcd cannot say.
func (m *Member) holderTTL(ctx context.Context, lease clientv3.LeaseID) time.Duration {
	ttl := time.Duration(m.ttl) * time.Second
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if tl, err := m.cli.TimeToLive(cctx, lease); err == nil && tl.GrantedTTL > 0 {
		ttl = time.Duration(tl.GrantedTTL) * time.Second
	}
	return ttl
}

func endpoints(b meta.Broker) string {
	var out []string
	for _, e := range b.Endpoints {
		out = append(out, fmt.Sprintf("%s://%s:%d", e.Name, e.Host, e.Port))
	}
	if len(out) == 0 {
		return "an unknown address"
	}
	return strings.Join(out, ",")
}

// keep campaigns on session's lease, and when the lease is lost (etcd
// unreachable for longer than its TTL) registers again on a new one,
// retrying until etcd answers.
func (m *Member) keep(ctx context.Context, session *concurrency.Session, id int32) {
	for {
		sctx, stop := context.WithCancel(ctx)
		go m.campaign(sctx, session, id)
		select {
		case <-ctx.Done():
			stop()
			m.revoke(session)
			return
		case <-session.Done():
			stop()
		}
		m.log.Warn("registration lease lost; registering again", "node.id", id)
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
			var err error
			if session, err = m.register(ctx, id, m.registration()); err == nil {
				break
			}
			m.log.Warn("registering again failed; retrying", "node.id", id, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// registration is the registration to write at brokers/<id> (claim sets
// its epoch): Join's with the marks that hold now, so that one written
// again after a lost lease says what the lost one said.
func (m *Member) registration() meta.Broker {
	reg := m.reg
	reg.InControlledShutdown = reg.InControlledShutdown || m.shuttingDown.Load()
	reg.UncleanShutdown = m.uncleanPending.Load()
	return reg
}

// BrokerEpoch is the broker epoch of this broker's latest registration
// (meta.Broker.Epoch), which its replica fetchers send in each Fetch
// (ReplicaState.ReplicaEpoch); 0 before Join.
func (m *Member) BrokerEpoch() int64 { return m.epoch.Load() }

// campaign enters the election on session's lease and stays in it until ctx
// ends. Who won is learned by observe, not here: a campaign whose key
// vanished with its lease can still return "elected".
func (m *Member) campaign(ctx context.Context, session *concurrency.Session, id int32) {
	e := concurrency.NewElection(session, m.prefix+controllerPrefix)
	for ctx.Err() == nil {
		err := e.Campaign(ctx, strconv.Itoa(int(id)))
		if err == nil || errors.Is(err, context.Canceled) {
			return
		}
		select {
		case <-ctx.Done():
		case <-session.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// observe keeps Controller equal to the election's leader: the campaign key
// with the lowest create revision, re-read on any change of the election
// keys. While etcd is unreachable the last known controller stays.
func (m *Member) observe(ctx context.Context) {
	pfx := m.prefix + controllerPrefix
	// changed is the revision of the last change of the election keys
	// seen (a campaign key's creation or deletion): unlike the Get's
	// header revision, which counts writes anywhere in etcd, it is one
	// the store's watch delivers.
	var changed int64
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, m.timeout)
		resp, err := m.cli.Get(cctx, pfx, clientv3.WithFirstCreate()...)
		cancel()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		leader := int32(-1)
		if len(resp.Kvs) > 0 {
			if n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 32); err == nil {
				leader = int32(n)
			}
			changed = max(changed, resp.Kvs[0].ModRevision)
		}
		m.setController(leader, changed)
		wctx, stop := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range m.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			for _, ev := range wr.Events {
				changed = max(changed, ev.Kv.ModRevision) // a deletion's is the deleting revision
			}
			if wr.Err() != nil || len(wr.Events) > 0 {
				break
			}
		}
		stop()
	}
}

// revoke ends a session's lease now, so the registration and campaign keys
// go at once rather than after the TTL.
func (m *Member) revoke(session *concurrency.Session) {
	session.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	m.cli.Revoke(ctx, session.Lease())
}

// Close leaves the cluster: the registration is deleted (its lease
// revoked), so the other brokers stop listing this one at once.
func (m *Member) Close() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	<-m.stopped
	m.cancel = nil
	return nil
}
