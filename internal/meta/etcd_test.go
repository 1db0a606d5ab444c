package meta

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"kbroker/internal/auth"
)

// testEtcd is a real single-member etcd in the test process, on fixed free
// ports of 127.0.0.1 so that it can be stopped and started again on the same
// data directory and address.
type testEtcd struct {
	t        *testing.T
	dir      string
	client   url.URL
	peer     url.URL
	srv      *embed.Etcd
	endpoint string
	// configure changes etcd's configuration from its defaults.
	configure func(*embed.Config)
}

func startEtcd(t *testing.T) *testEtcd { return startEtcdWith(t, nil) }

func startEtcdWith(t *testing.T, configure func(*embed.Config)) *testEtcd {
	t.Helper()
	te := &testEtcd{t: t, dir: t.TempDir(), configure: configure}
	te.client = url.URL{Scheme: "http", Host: freeAddr(t)}
	te.peer = url.URL{Scheme: "http", Host: freeAddr(t)}
	te.endpoint = te.client.Host
	te.start()
	t.Cleanup(te.stop)
	return te
}

// freeAddr returns a 127.0.0.1 address with a port the kernel just handed
// out, so a restarted etcd can bind the same one again.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (te *testEtcd) start() {
	te.t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "kbroker-test"
	cfg.Dir = te.dir
	cfg.ListenClientUrls = []url.URL{te.client}
	cfg.AdvertiseClientUrls = []url.URL{te.client}
	cfg.ListenPeerUrls = []url.URL{te.peer}
	cfg.AdvertisePeerUrls = []url.URL{te.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	if te.configure != nil {
		te.configure(cfg)
	}
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		te.t.Fatalf("starting etcd: %v", err)
	}
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		srv.Close()
		te.t.Fatal("etcd did not become ready")
	}
	te.srv = srv
}

func (te *testEtcd) stop() {
	if te.srv != nil {
		te.srv.Close()
		te.srv = nil
	}
}

// open connects a backend to endpoint (the etcd itself by default) under
// prefix, closed when the test ends.
func (te *testEtcd) open(t *testing.T, prefix string, endpoint ...string) *Etcd {
	t.Helper()
	opts := EtcdOptions{Prefix: prefix, RequestTimeout: 500 * time.Millisecond}
	if len(endpoint) > 0 {
		opts.Endpoints = endpoint
	}
	return te.openWith(t, opts)
}

// openWith connects a backend with opts, whose zero endpoints and dial
// timeout are the test's.
func (te *testEtcd) openWith(t *testing.T, opts EtcdOptions) *Etcd {
	t.Helper()
	if len(opts.Endpoints) == 0 {
		opts.Endpoints = []string{te.endpoint}
	}
	opts.DialTimeout = cmp.Or(opts.DialTimeout, 2*time.Second)
	e, err := OpenEtcd(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func (te *testEtcd) openStore(t *testing.T, prefix string, endpoint ...string) *Store {
	t.Helper()
	return openStoreOn(t, te.open(t, prefix, endpoint...))
}

func openStoreOn(t *testing.T, e *Etcd) *Store {
	t.Helper()
	s, err := Open(e, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retryUnavailable repeats op while etcd is coming back.
func retryUnavailable(t *testing.T, op func() error) {
	t.Helper()
	var err error
	deadline := time.Now().Add(15 * time.Second)
	for err = op(); errors.Is(err, ErrUnavailable) && time.Now().Before(deadline); err = op() {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestEtcdConcurrentIncrementsAcrossClientsLoseNothing(t *testing.T) {
	te := startEtcd(t)
	clients := []*Etcd{te.open(t, "/cas/"), te.open(t, "/cas/")}
	const workers, increments = 6, 12 // per client
	var wg sync.WaitGroup
	var runs, conflicts atomic.Int64
	errs := make(chan error, 2*workers)
	for _, e := range clients {
		for range workers {
			wg.Go(func() {
				for range increments {
					for {
						_, err := e.Update(context.Background(), func(tx Tx) error {
							runs.Add(1)
							n := 0
							if v, ok := tx.Get("counter"); ok {
								n, _ = strconv.Atoi(string(v))
							}
							tx.Put("counter", []byte(strconv.Itoa(n+1)))
							return nil
						})
						if errors.Is(err, ErrConflict) {
							conflicts.Add(1)
							continue // retriable by contract; the increment did not happen
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	kv, _, err := clients[0].Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(kv["counter"]), strconv.Itoa(2*workers*increments); got != want {
		t.Fatalf("counter %s after %s increments: updates were lost", got, want)
	}
	if runs.Load() <= 2*workers*increments {
		t.Fatalf("no transaction was re-run (%d runs), so the test raced nothing", runs.Load())
	}
	t.Logf("%d transaction runs for %d increments, %d ErrConflict", runs.Load(), 2*workers*increments, conflicts.Load())
}

func TestEtcdStoresOnTwoClientsFollowEachOther(t *testing.T) {
	te := startEtcd(t)
	ctx := context.Background()
	a, b := te.openStore(t, "/follow/"), te.openStore(t, "/follow/")

	idA, err := a.EnsureClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster id on B", func() bool { return b.Snapshot().ClusterID == idA })
	if idB, err := b.EnsureClusterID(ctx); err != nil || idB != idA {
		t.Fatalf("B's cluster id %q (%v), A's %q", idB, err, idA)
	}

	created, err := a.CreateTopic(ctx, Topic{Name: "orders", Partitions: 3, ReplicationFactor: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "topic on B", func() bool {
		got := b.Snapshot().Topic("orders")
		return got != nil && got.ID == created.ID && got.Partitions == 3
	})
	if _, err := b.CreateTopic(ctx, Topic{Name: "orders", Partitions: 1}, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("creating the topic again through B: %v", err)
	}

	err = b.UpdateConfigs(ctx, TopicConfigs, "orders", func(m map[string]string) (map[string]string, error) {
		m["retention.ms"] = "60000"
		return m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "config on A", func() bool { return a.Snapshot().TopicConfig("orders")["retention.ms"] == "60000" })
}

func TestEtcdOutageFailsWritesRetriablyAndStoresConverge(t *testing.T) {
	te := startEtcd(t)
	ctx := context.Background()
	// The clients reach etcd through a proxy that drops their connections
	// when etcd stops, as a crashed etcd would; a graceful stop would keep
	// serving their open watch streams for seconds.
	proxy := startProxy(t, te.endpoint)
	a, b := te.openStore(t, "/outage/", proxy.addr()), te.openStore(t, "/outage/", proxy.addr())
	if _, err := a.CreateTopic(ctx, Topic{Name: "before", Partitions: 1}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "topic on B", func() bool { return b.Snapshot().Topic("before") != nil })

	proxy.cut()
	te.stop()
	start := time.Now()
	_, err := a.CreateTopic(ctx, Topic{Name: "during", Partitions: 1}, nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("write while etcd is down: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("write while etcd is down took %v", took)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = b.UpdateConfigs(short, BrokerConfigs, "", func(m map[string]string) (map[string]string, error) {
		m["x"] = "1"
		return m, nil
	})
	cancel()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write with a short deadline while etcd is down: %v", err)
	}
	for _, s := range []*Store{a, b} {
		if snap := s.Snapshot(); snap.Topic("before") == nil || snap.Topic("during") != nil {
			t.Fatalf("snapshot while etcd is down: %v", slices.Collect(snap.TopicNames()))
		}
	}

	te.start()
	proxy.restore()
	retryUnavailable(t, func() error {
		_, err := a.CreateTopic(ctx, Topic{Name: "after", Partitions: 1}, nil)
		return err
	})
	retryUnavailable(t, func() error {
		return b.UpdateConfigs(ctx, BrokerConfigs, "", func(m map[string]string) (map[string]string, error) {
			m["log.retention.ms"] = "1000"
			return m, nil
		})
	})
	for name, s := range map[string]*Store{"A": a, "B": b} {
		eventually(t, "store "+name+" to converge", func() bool {
			snap := s.Snapshot()
			return snap.Topic("after") != nil && snap.Topic("during") == nil && snap.BrokerConfig("")["log.retention.ms"] == "1000"
		})
	}
}

func TestEtcdStoreReloadsWhenCompactedWhileDisconnected(t *testing.T) {
	te := startEtcd(t)
	ctx := context.Background()
	proxy := startProxy(t, te.endpoint)
	a := te.openStore(t, "/compact/")
	b := te.openStore(t, "/compact/", proxy.addr())
	var mu sync.Mutex
	full := 0
	b.OnChange(func(e Event) {
		if e.Full {
			mu.Lock()
			full++
			mu.Unlock()
		}
	})
	if _, err := a.CreateTopic(ctx, Topic{Name: "old", Partitions: 1}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "topic on B", func() bool { return b.Snapshot().Topic("old") != nil })

	proxy.cut()
	if err := a.DeleteTopic(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTopic(ctx, Topic{Name: "new", Partitions: 2}, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	_, rev, err := a.backend.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.backend.(*Etcd).Client().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // B stays behind across the compaction
	if b.Snapshot().Topic("old") == nil {
		t.Fatal("B learned of changes while disconnected")
	}
	proxy.restore()

	eventually(t, "B to reload", func() bool {
		snap := b.Snapshot()
		return snap.Topic("old") == nil && snap.Topic("new") != nil && snap.TopicConfig("new")["cleanup.policy"] == "compact"
	})
	mu.Lock()
	defer mu.Unlock()
	if full == 0 {
		t.Fatal("B converged without a full reload, so it was never behind a compaction")
	}
}

// tcpProxy stands between a client and etcd so a test can cut one client off
// while etcd stays up for the others.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(u, c)
		go pipe(c, u)
	}
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *tcpProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func TestEtcdOpenFailsClearlyWhenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := OpenEtcd(context.Background(), EtcdOptions{
		Endpoints:      []string{freeAddr(t)},
		DialTimeout:    200 * time.Millisecond,
		RequestTimeout: 300 * time.Millisecond,
	})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("opening an unreachable etcd: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
	t.Log(err)
}

func TestEtcdPrefixDefaultsAndIsolates(t *testing.T) {
	te := startEtcd(t)
	ctx := context.Background()
	def := te.open(t, "")
	other := te.open(t, "other") // a trailing "/" is added
	if def.Prefix() != defaultEtcdPrefix || other.Prefix() != "other/" {
		t.Fatalf("prefixes %q %q", def.Prefix(), other.Prefix())
	}
	if _, err := def.Update(ctx, func(tx Tx) error { tx.Put("topics/t", []byte("x")); return nil }); err != nil {
		t.Fatal(err)
	}
	raw, err := def.Client().Get(ctx, "/kbroker/topics/t")
	if err != nil || len(raw.Kvs) != 1 || string(raw.Kvs[0].Value) != "x" {
		t.Fatalf("key layout: %v %v", raw, err)
	}
	kv, _, err := other.Load(ctx)
	if err != nil || len(kv) != 0 {
		t.Fatalf("other prefix sees %v (%v)", kv, err)
	}
}

func TestEtcdTransactionOverTxnOpsLimitFailsClearly(t *testing.T) {
	te := startEtcd(t)
	e := te.open(t, "/big/")
	_, err := e.Update(context.Background(), func(tx Tx) error {
		for i := range 200 { // etcd's default --max-txn-ops is 128
			tx.Put("k/"+strconv.Itoa(i), []byte("v"))
		}
		return nil
	})
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "--max-txn-ops") {
		t.Fatalf("oversized transaction: %v", err)
	}
}

// The embedded etcd keeps etcd's default --max-txn-ops (128): batches of
// hundreds of items must still go through, in chunks.
func TestEtcdBatchesLargerThanTxnOpsLimitSucceed(t *testing.T) {
	te := startEtcd(t)
	s := te.openStore(t, "/big/")
	other := te.openStore(t, "/big/")
	ctx := context.Background()

	const n = 500
	var topics []NewTopic
	for i := range n {
		nt := NewTopic{Topic: Topic{Name: "t" + strconv.Itoa(i), Partitions: 1}}
		if i%2 == 0 {
			nt.Configs = map[string]string{"retention.ms": strconv.Itoa(1000 + i)}
		}
		topics = append(topics, nt)
	}
	topics = append(topics, NewTopic{Topic: Topic{Name: "t7", Partitions: 1}}) // a duplicate in the batch
	created, errs, err := s.CreateTopics(ctx, topics)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil || created[i] == nil {
			t.Fatalf("topic %d: %v", i, errs[i])
		}
	}
	if !errors.Is(errs[n], ErrTopicExists) {
		t.Fatalf("duplicate t7 in the batch: %v, want ErrTopicExists", errs[n])
	}
	if got := s.Snapshot().TopicCount(); got != n {
		t.Fatalf("writer's snapshot has %d topics right after CreateTopics, want %d", got, n)
	}
	if c := s.Snapshot().TopicConfig("t498")["retention.ms"]; c != "1498" {
		t.Fatalf("t498 retention.ms = %q", c)
	}

	paths := make([]string, 300)
	for i := range paths {
		paths[i] = "clients/c" + strconv.Itoa(i)
	}
	qerrs, err := s.UpdateQuotas(ctx, paths, func(i int, cur map[string]float64) (map[string]float64, error) {
		return map[string]float64{"producer_byte_rate": float64(1000 + i)}, nil
	})
	if err != nil || errors.Join(qerrs...) != nil {
		t.Fatalf("UpdateQuotas of 300 entities: %v %v", err, errors.Join(qerrs...))
	}
	if got := len(s.Snapshot().QuotaOverrides()); got != 300 {
		t.Fatalf("%d quota entities, want 300", got)
	}

	if err := s.CreateACLs(ctx, readACLs("t")); err != nil {
		t.Fatalf("CreateACLs of 300 ACLs on 200 resources: %v", err)
	}
	if got := len(s.Snapshot().AllACLs()); got != 300 {
		t.Fatalf("%d ACLs stored, want 300", got)
	}
	deleteAllACLs(t, s, 300)

	eventually(t, "the other store to see every topic and entity", func() bool {
		snap := other.Snapshot()
		return snap.TopicCount() == n && len(snap.QuotaOverrides()) == 300 && len(snap.AllACLs()) == 0
	})
}

func TestEtcdTransactionOverRequestBytesLimitFailsClearly(t *testing.T) {
	te := startEtcd(t)
	e := te.open(t, "/big/")
	_, err := e.Update(context.Background(), func(tx Tx) error {
		tx.Put("k", make([]byte, 2<<20)) // etcd's default --max-request-bytes is 1.5 MiB
		return nil
	})
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "--max-request-bytes") {
		t.Fatalf("oversized transaction: %v", err)
	}
}

// bigValue is n bytes of c, for values that fill etcd requests.
func bigValue(c byte, n int) string { return strings.Repeat(string(c), n) }

// The embedded etcd keeps etcd's default --max-request-bytes (1.5 MiB):
// batches of many large items must still go through, in chunks, and an
// item too large alone fails by itself.
func TestEtcdBatchesLargerThanRequestBytesLimitSucceed(t *testing.T) {
	te := startEtcd(t)
	// A 1.5 MiB commit can take longer than the tests' usual 500 ms on a
	// loaded machine.
	s := openStoreOn(t, te.openWith(t, EtcdOptions{Prefix: "/big/", RequestTimeout: 20 * time.Second}))
	other := te.openStore(t, "/big/")
	ctx := context.Background()

	// 64 topics with ~100 KiB of configs each (6.4 MiB in all), and one
	// whose configs alone are over the limit.
	const n, huge = 65, 20
	var topics []NewTopic
	for i := range n {
		configs := map[string]string{}
		for c := range 10 {
			configs["c"+strconv.Itoa(c)] = bigValue('a'+byte(c), 10<<10)
		}
		if i == huge {
			configs = map[string]string{"c": bigValue('x', 2<<20)}
		}
		topics = append(topics, NewTopic{Topic: Topic{Name: "t" + strconv.Itoa(i), Partitions: 1}, Configs: configs})
	}
	created, errs, err := s.CreateTopics(ctx, topics)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		switch {
		case i == huge:
			if !errors.Is(errs[i], ErrTooLarge) || created[i] != nil {
				t.Fatalf("topic with 2 MiB of configs: created %v, err %v; want ErrTooLarge", created[i], errs[i])
			}
		case errs[i] != nil || created[i] == nil:
			t.Fatalf("topic %d: %v", i, errs[i])
		}
	}
	snap := s.Snapshot()
	if snap.TopicCount() != n-1 || len(snap.TopicConfig("t64")["c9"]) != 10<<10 {
		t.Fatalf("writer's snapshot: %d topics, t64 c9 of %d bytes", snap.TopicCount(), len(snap.TopicConfig("t64")["c9"]))
	}

	// Quota entities whose names fill the request before --max-txn-ops.
	paths := make([]string, 300)
	for i := range paths {
		paths[i] = "clients/" + bigValue('c', 8<<10) + strconv.Itoa(i)
	}
	paths[7] = "clients/" + bigValue('c', 2<<20)
	qerrs, err := s.UpdateQuotas(ctx, paths, func(i int, cur map[string]float64) (map[string]float64, error) {
		return map[string]float64{"producer_byte_rate": float64(1000 + i)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, qerr := range qerrs {
		if (i == 7) != errors.Is(qerr, ErrTooLarge) || i != 7 && qerr != nil {
			t.Fatalf("quota entity %d: %v", i, qerr)
		}
	}
	if got := len(s.Snapshot().QuotaOverrides()); got != 299 {
		t.Fatalf("%d quota entities, want 299", got)
	}

	acls := readACLs(bigValue('r', 8<<10))
	if err := s.CreateACLs(ctx, acls); err != nil {
		t.Fatalf("CreateACLs of 300 ACLs on 200 8 KiB resources: %v", err)
	}
	tooBig := acls[0]
	tooBig.Principal = "User:" + bigValue('p', 2<<20)
	if err := s.CreateACLs(ctx, []auth.ACL{tooBig}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CreateACLs of an ACL over the limit: %v, want ErrTooLarge", err)
	}
	deleteAllACLs(t, s, 300)

	eventually(t, "the other store to see every topic and entity", func() bool {
		snap := other.Snapshot()
		return snap.TopicCount() == n-1 && len(snap.QuotaOverrides()) == 299 && len(snap.AllACLs()) == 0
	})
}

// A store told etcd's limits (metadata.etcd.max.txn.ops and
// metadata.etcd.max.request.bytes) fits its batches to an etcd started with
// smaller ones; one left at the defaults gets etcd's refusal as ErrTooLarge.
func TestEtcdBatchesFitAnEtcdWithSmallerLimits(t *testing.T) {
	te := startEtcdWith(t, func(cfg *embed.Config) {
		cfg.MaxTxnOps, cfg.MaxRequestBytes = 16, 64<<10
	})
	ctx := context.Background()
	var topics []NewTopic
	for i := range 50 {
		topics = append(topics, NewTopic{Topic: Topic{Name: "t" + strconv.Itoa(i), Partitions: 1},
			Configs: map[string]string{"c": bigValue('v', 10<<10)}})
	}

	told := openStoreOn(t, te.openWith(t, EtcdOptions{Prefix: "/told/", MaxTxnOps: 16, MaxRequestBytes: 64 << 10, RequestTimeout: 5 * time.Second}))
	_, errs, err := told.CreateTopics(ctx, topics)
	if err != nil || errors.Join(errs...) != nil {
		t.Fatalf("CreateTopics against etcd's limits: %v %v", err, errors.Join(errs...))
	}
	if got := told.Snapshot().TopicCount(); got != 50 {
		t.Fatalf("%d topics, want 50", got)
	}

	untold := openStoreOn(t, te.openWith(t, EtcdOptions{Prefix: "/untold/", MaxTxnOps: 16, RequestTimeout: 5 * time.Second}))
	_, _, err = untold.CreateTopics(ctx, topics)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "metadata.etcd.max.request.bytes") {
		t.Fatalf("CreateTopics over etcd's --max-request-bytes: %v, want ErrTooLarge naming the setting", err)
	}
}

// readACLs is 300 ACLs on the 200 topics named resourcePrefix plus 0 to 199.
func readACLs(resourcePrefix string) []auth.ACL {
	var acls []auth.ACL
	for i := range 300 {
		acls = append(acls, auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: resourcePrefix + strconv.Itoa(i%200),
			PatternType: auth.PatternLiteral, Principal: "User:u" + strconv.Itoa(i), Host: auth.WildcardHost,
			Operation: auth.OpRead, Permission: auth.PermissionAllow})
	}
	return acls
}

// deleteAllACLs deletes every ACL of s, which must be want of them.
func deleteAllACLs(t *testing.T, s *Store, want int) {
	t.Helper()
	matched, err := s.DeleteACLs(context.Background(), []auth.Filter{auth.MatchAll})
	if err != nil {
		t.Fatalf("DeleteACLs: %v", err)
	}
	if len(matched[0]) != want || len(s.Snapshot().AllACLs()) != 0 {
		t.Fatalf("DeleteACLs matched %d of %d and left %d", len(matched[0]), want, len(s.Snapshot().AllACLs()))
	}
}

// Sync: a store that writes nothing learns another store's write at once,
// and one whose etcd revision moved only outside its prefix (another
// cluster sharing the etcd) still returns promptly, through a progress
// notification.
func TestEtcdSyncSeesOtherWritersAndForeignRevisions(t *testing.T) {
	te := startEtcd(t)
	a := te.openStore(t, "/a/")
	b := te.openStore(t, "/a/")
	foreign := te.open(t, "/other/")
	ctx := context.Background()
	for i := range 50 {
		name := "t" + strconv.Itoa(i)
		if _, err := a.CreateTopic(ctx, Topic{Name: name, Partitions: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if b.Snapshot().Topic(name) == nil {
			t.Fatalf("after Sync, b does not know %s just created through a", name)
		}
	}
	for i := range 5 {
		if _, err := foreign.Update(ctx, func(tx Tx) error { tx.Put("x", []byte(strconv.Itoa(i))); return nil }); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := b.Sync(ctx); err != nil {
			t.Fatalf("Sync after a write outside the prefix: %v", err)
		}
		if d := time.Since(start); d > 400*time.Millisecond {
			t.Errorf("Sync after a write outside the prefix took %v", d)
		}
	}
}
