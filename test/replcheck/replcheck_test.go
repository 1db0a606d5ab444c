// Package replcheck is a fault-injection checker of kbroker's replication,
// in the spirit of Jepsen's Kafka and Bufstream analyses: three
// `kbroker serve` processes on one etcd (embedded in the test), a topic of
// replication factor 3 with min.insync.replicas 2, idempotent franz-go
// producers with acks=all and a consumer reading all along, while a
// nemesis picks a broker at random and kill -9s it (restarting it after a
// while), pauses it with SIGSTOP for longer than replica.lag.time.max.ms
// and its etcd session (so it leaves the ISR and loses its leaderships
// while it still believes in them), restarts it with SIGTERM, or kill -9s
// two brokers at once (ISRs of one, offline partitions, acks=all refused)
// and restarts them in either order; or it restarts the etcd member (stop,
// then start on the same data directory and port), or cuts one broker off
// from etcd for longer than its session, clients and other brokers still
// reaching it, and restores it.
//
// Afterwards, once every broker is back in every ISR and the producers
// have stopped, each replica's log is read from its segment files, and:
//   - the three replicas of each partition hold the same records at the
//     same offsets and leader epochs;
//   - every acknowledged record is at the offset its acknowledgement gave,
//     once (no duplicate of any record), and each producer's records are
//     in its order;
//   - what the consumer read never went back or skipped an offset, and is
//     still in the log at the offset it was read at (no consumer saw a
//     record that was not committed and later vanished).
//
// Each broker advertises a relay with a stable address (test/tcprelay), so
// clients and fetchers follow a broker across restarts on new ports, and
// reaches etcd through a relay of its own, which the etcd partition cuts.
// What is not injected: partitions between brokers or from clients (the
// relays could drop traffic, but not asymmetrically per peer), clock
// faults, disk faults, the loss of etcd's data.
//
// The default run is sized for CI (5 faults, about a minute on 2 busy
// cores). The long run, for BENCHMARKS.md:
//
//	go test -count=1 -timeout 60m -run TestReplCheck -v ./test/replcheck -args -replcheck.faults=200
//
// -replcheck.only picks the faults (-replcheck.only="etcd restart,etcd
// partition"); -replcheck.etcd-faults=false leaves etcd alone.
// -replcheck.seed replays a run's random choices (the seed is logged); the
// brokers' timing is not replayed.
package replcheck

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/testbin"
	"kbroker/test/tcprelay"
)

var (
	flagFaults     = flag.Int("replcheck.faults", 5, "faults the nemesis injects")
	flagProducers  = flag.Int("replcheck.producers", 3, "idempotent acks=all producers")
	flagPartitions = flag.Int("replcheck.partitions", 3, "partitions of the topic")
	flagSeed       = flag.Int64("replcheck.seed", 0, "seed of the nemesis' choices (0: the time)")
	flagEtcdFaults = flag.Bool("replcheck.etcd-faults", true, "also restart etcd and cut a broker off from it")
	flagOnly       = flag.String("replcheck.only", "", "inject only these faults, comma-separated (of: "+strings.Join(allFaults, ", ")+")")
)

// allFaults are the nemesis' faults, in the order a seed picks them by.
var allFaults = []string{"kill -9", "SIGSTOP", "SIGTERM", "two kill -9", "etcd restart", "etcd partition"}

// faultKinds are the faults this run picks from.
func faultKinds(t *testing.T) []string {
	if *flagOnly != "" {
		only := strings.Split(*flagOnly, ",")
		for _, k := range only {
			if !slices.Contains(allFaults, k) {
				t.Fatalf("-replcheck.only: no fault %q (of %q)", k, allFaults)
			}
		}
		return only
	}
	if *flagEtcdFaults {
		return allFaults
	}
	return allFaults[:4]
}

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

const (
	topic = "replcheck"
	// lagMax is replica.lag.time.max.ms, and session the etcd session
	// (lease) timeout: short, so a run sees many ISR changes and
	// elections; a pause lasts longer than both.
	lagMax  = 3 * time.Second
	session = 2 * time.Second
)

// node is one broker across its runs.
type node struct {
	id    int32
	b     *testbin.Broker
	relay *tcprelay.Relay
	// etcdRelay carries the broker's connections to etcd: pointed nowhere,
	// the broker is cut off from etcd.
	etcdRelay *tcprelay.Relay
	proc      *testbin.Proc
	// down: killed or shut down, not yet restarted.
	down bool
}

func (n *node) start(t *testing.T) {
	t.Helper()
	n.proc = n.b.Start(t)
	n.relay.Point(n.proc.Addr)
	n.down = false
}

// kill is kill -9: the relay drops the connections, as a dead host's.
func (n *node) kill(t *testing.T) {
	t.Helper()
	n.relay.Point("")
	n.proc.Kill9(t)
	n.down = true
}

// terminate is a clean shutdown (SIGTERM).
func (n *node) terminate(t *testing.T) {
	t.Helper()
	n.proc.Stop(t, syscall.SIGTERM, 30*time.Second)
	n.relay.Point("")
	n.down = true
}

func (n *node) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(n.proc.Pid(), sig); err != nil {
		t.Fatalf("broker %d: %v: %v", n.id, sig, err)
	}
}

func TestReplCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three kbroker processes under faults")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("faults %d, producers %d, partitions %d, seed %d", *flagFaults, *flagProducers, *flagPartitions, seed)
	rng := rand.New(rand.NewSource(seed))
	started := time.Now()

	etcd := etcdtest.Start(t)
	etcdAddr := strings.TrimPrefix(etcd.Endpoint(), "http://")
	var nodes []*node
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		n := &node{id: id, relay: tcprelay.New(t, tcprelay.RefuseWhileDown()), etcdRelay: tcprelay.New(t, tcprelay.RefuseWhileDown())}
		n.etcdRelay.Point(etcdAddr)
		n.b = testbin.NewBroker(t, map[string]string{
			"node.id":                          strconv.Itoa(int(id)),
			"metadata.etcd.endpoints":          "http://" + n.etcdRelay.Addr(),
			"metadata.etcd.session.timeout.ms": strconv.Itoa(int(session / time.Millisecond)),
			"advertised.listeners":             "PLAINTEXT://" + n.relay.Addr(),
			"replica.lag.time.max.ms":          strconv.Itoa(int(lagMax / time.Millisecond)),
			"log.retention.check.interval.ms":  "600000",
		})
		nodes = append(nodes, n)
		seeds = append(seeds, n.relay.Addr())
	}
	for _, n := range nodes {
		n.start(t)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if !waitFor(ctx, 30*time.Second, func() bool { return liveBrokers(ctx, adm) == 3 }) {
		t.Fatal("three brokers did not register")
	}
	minISR := "2"
	res, err := adm.CreateTopic(ctx, int32(*flagPartitions), 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 30*time.Second, func() bool { return healthy(ctx, adm) }) {
		t.Fatal("the topic's partitions did not get leaders and full ISRs")
	}

	h := &history{}
	stopProducing := make(chan struct{})
	var producers sync.WaitGroup
	for i := range *flagProducers {
		producers.Go(func() { runProducer(t, i, seeds, *flagPartitions, h, stopProducing) })
	}
	consumerCtx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	c := &consumer{next: map[int32]int64{}}
	var consuming sync.WaitGroup
	consuming.Go(func() { c.run(consumerCtx, t, seeds) })

	kinds := map[string]int{}
	faults := faultKinds(t)
	unhealthy := 0
	expired := 0 // etcd partitions that outlasted the broker's session
	for k := range *flagFaults {
		if !waitFor(ctx, 40*time.Second, func() bool { return healthy(ctx, adm) }) {
			unhealthy++
			t.Logf("fault %d: the cluster was not healthy (every ISR full) 40 s after the last fault; injecting anyway", k+1)
		}
		time.Sleep(time.Duration(1000+rng.Intn(2000)) * time.Millisecond)
		n := nodes[rng.Intn(len(nodes))]
		acked := h.ackedCount()
		kind := faults[rng.Intn(len(faults))]
		var what string
		switch kind {
		case "etcd restart":
			// etcd goes away and comes back with its data: the brokers'
			// sessions and watches must survive it or be made again, and
			// no decision taken before it may be lost or taken twice.
			down := time.Duration(500+rng.Intn(2500)) * time.Millisecond
			what = fmt.Sprintf("restart of etcd (down %v)", down.Round(100*time.Millisecond))
			etcd.Stop()
			time.Sleep(down)
			if err := etcd.Start(); err != nil {
				t.Fatalf("restarting etcd: %v", err)
			}
		case "etcd partition":
			// One broker cut off from etcd longer than its session, still
			// serving clients and peers: it loses its leaderships in etcd
			// while it may still believe in them, as under SIGSTOP, but
			// running all along.
			cut := session + time.Duration(1500+rng.Intn(3000))*time.Millisecond
			what = fmt.Sprintf("partition from etcd (%v)", cut.Round(100*time.Millisecond))
			other := nodes[int(n.id)%len(nodes)]
			n.etcdRelay.Point("")
			end := time.Now().Add(cut)
			// The fault bites once the session expired: the other
			// brokers no longer list this one.
			if waitFor(ctx, cut, func() bool { return registeredAt(ctx, admin, other.id) == 2 }) {
				expired++
			} else {
				what += ", its session outlived it"
			}
			time.Sleep(time.Until(end))
			n.etcdRelay.Point(etcdAddr)
		case "two kill -9":
			// Two brokers down at once: the ISRs shrink to one, acks=all
			// stops (min.insync.replicas 2), partitions whose last ISR
			// member is down go offline, and the two restarted brokers
			// (in either order) must elect, truncate and catch up without
			// losing what was acknowledged.
			other := nodes[(int(n.id)+rng.Intn(2))%len(nodes)]
			what = fmt.Sprintf("kill -9 of broker %d, then", other.id)
			other.kill(t)
			time.Sleep(time.Duration(rng.Intn(1500)) * time.Millisecond)
			n.kill(t)
			time.Sleep(time.Duration(500+rng.Intn(2000)) * time.Millisecond)
			first, second := n, other
			if rng.Intn(2) == 0 {
				first, second = other, n
			}
			first.start(t)
			time.Sleep(time.Duration(rng.Intn(2000)) * time.Millisecond)
			second.start(t)
			what += " kill -9"
		case "kill -9":
			what = "kill -9"
			n.kill(t)
			time.Sleep(time.Duration(500+rng.Intn(2500)) * time.Millisecond)
			n.start(t)
		case "SIGSTOP":
			pause := lagMax + time.Duration(500+rng.Intn(3000))*time.Millisecond
			what = fmt.Sprintf("SIGSTOP %v", pause.Round(100*time.Millisecond))
			n.signal(t, syscall.SIGSTOP)
			time.Sleep(pause)
			n.signal(t, syscall.SIGCONT)
		default: // SIGTERM
			what = "SIGTERM and restart"
			n.terminate(t)
			n.start(t)
		}
		kinds[kind]++
		if kind == "etcd restart" {
			t.Logf("fault %d: %s (%d records acknowledged before it)", k+1, what, acked)
		} else {
			t.Logf("fault %d: %s of broker %d (%d records acknowledged before it)", k+1, what, n.id, acked)
		}
	}
	for _, n := range nodes {
		if n.down {
			n.start(t)
		}
	}
	if !waitFor(ctx, 60*time.Second, func() bool { return healthy(ctx, adm) }) {
		t.Error("the cluster did not heal (every partition led, every ISR full) within 60 s of the last fault")
	}
	close(stopProducing)
	producers.Wait()

	// The replicas converge once nothing is produced.
	logs := map[int32]map[int32][]entry{}
	converged := waitFor(ctx, 30*time.Second, func() bool {
		for p := int32(0); p < int32(*flagPartitions); p++ {
			logs[p] = map[int32][]entry{}
			for _, n := range nodes {
				l, err := readReplica(n.b.DataDir(), p)
				if err != nil {
					t.Logf("reading broker %d's log of partition %d: %v", n.id, p, err)
					return false
				}
				logs[p][n.id] = l
			}
			if len(logs[p][1]) != len(logs[p][2]) || len(logs[p][1]) != len(logs[p][3]) {
				return false
			}
		}
		return true
	})
	if !converged {
		t.Log("the replicas' logs did not reach the same length within 30 s; comparing them as they are")
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 30*time.Second, func() bool {
		caughtUp := true
		ends.Each(func(o kadm.ListedOffset) { caughtUp = caughtUp && c.position(o.Partition) >= o.Offset })
		return caughtUp
	}) {
		t.Log("the consumer did not reach the high watermarks within 30 s")
	}
	stopConsumer()
	consuming.Wait()

	acks := h.all()
	anomalies := verify(logs, acks, c.reads, c.anomalies)
	okCount, failed := 0, map[string]int{}
	for _, a := range acks {
		if a.offset >= 0 {
			okCount++
		} else {
			failed[a.err]++
		}
	}
	t.Logf("%v: faults %v (%d injected while not healthy; %d etcd partitions expired the session); %d records acknowledged, failed %v; consumer read %d",
		time.Since(started).Round(time.Second), kinds, unhealthy, expired, okCount, failed, len(c.reads))
	if okCount == 0 {
		t.Error("no record was acknowledged: the run checked nothing")
	}
	if len(anomalies) > 0 {
		if len(anomalies) > 30 {
			anomalies = append(anomalies[:30], fmt.Sprintf("... and %d more", len(anomalies)-30))
		}
		t.Fatalf("%d anomalies:\n%s", len(anomalies), strings.Join(anomalies, "\n"))
	}
}

// history is what every producer sent.
type history struct {
	mu   sync.Mutex
	acks []ack
}

func (h *history) add(a ack) {
	h.mu.Lock()
	h.acks = append(h.acks, a)
	h.mu.Unlock()
}

func (h *history) ackedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, a := range h.acks {
		if a.offset >= 0 {
			n++
		}
	}
	return n
}

func (h *history) all() []ack {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ack(nil), h.acks...)
}

// runProducer writes producer i's records, round robin over the
// partitions, each partition its own sequence, until stop; then it waits
// (a bounded time) for the answers of what it sent.
func runProducer(t *testing.T, i int, seeds []string, partitions int, h *history, stop <-chan struct{}) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second), kgo.MaxBufferedRecords(500),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	seqs := make([]int, partitions)
	for n := 0; ; n++ {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			if err := cl.Flush(ctx); err != nil {
				t.Logf("producer %d: flush: %v (what is unanswered counts as failed)", i, err)
			}
			cancel()
			return
		default:
		}
		p := int32(n % partitions)
		seq := seqs[p]
		seqs[p]++
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(value(i, seq))}
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			a := ack{producer: i, seq: seq, partition: r.Partition, offset: r.Offset}
			if err != nil {
				a.offset, a.err = -1, errName(err)
			}
			h.add(a)
		})
		time.Sleep(2 * time.Millisecond)
	}
}

// errName shortens an error for the run's summary.
func errName(err error) string {
	s := err.Error()
	if i := strings.Index(s, ":"); i > 0 && i < 60 {
		return s[:i]
	}
	return s
}

// consumer reads the topic from the start during the whole run, and notes
// an offset read again (the log went back under it) or skipped.
type consumer struct {
	mu        sync.Mutex
	next      map[int32]int64
	reads     []seen
	anomalies []string
}

func (c *consumer) position(p int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next[p]
}

func (c *consumer) run(ctx context.Context, t *testing.T, seeds []string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			c.mu.Lock()
			defer c.mu.Unlock()
			want := c.next[r.Partition]
			switch {
			case r.Offset < want:
				c.anomalies = append(c.anomalies, fmt.Sprintf("partition %d: the consumer read offset %d (%q) after offset %d: its offsets went back", r.Partition, r.Offset, r.Value, want-1))
			case r.Offset > want:
				c.anomalies = append(c.anomalies, fmt.Sprintf("partition %d: the consumer read offset %d after offset %d: it skipped %d offsets", r.Partition, r.Offset, want-1, r.Offset-want))
			}
			c.next[r.Partition] = max(want, r.Offset+1)
			c.reads = append(c.reads, seen{r.Partition, r.Offset, string(r.Value)})
		})
	}
}

// registeredAt is how many brokers the metadata of broker id lists (0
// when it does not answer): a broker cut off from etcd lists what it last
// knew, the others what etcd says.
func registeredAt(ctx context.Context, cl *kgo.Client, id int32) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return 0
	}
	return len(resp.Brokers)
}

// liveBrokers is how many brokers the metadata lists.
func liveBrokers(ctx context.Context, adm *kadm.Client) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx)
	if err != nil {
		return 0
	}
	return len(m.Brokers)
}

// healthy reports whether all three brokers are registered and every
// partition of the topic has a leader and all three replicas in sync.
func healthy(ctx context.Context, adm *kadm.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx, topic)
	if err != nil || len(m.Brokers) != 3 {
		return false
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) != 3 {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for ctx.Err() == nil {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}
