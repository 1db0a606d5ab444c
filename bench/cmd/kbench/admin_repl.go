package main

// Replication cases R1–R3 (issue 17, Performance): kbroker clusters of
// `kbroker serve` processes on one etcd embedded in kbench (as B6 etcd and
// internal/cluster/etcdtest run it), measured against a single kbroker in
// the same run, because every broker shares this one machine's cores and
// only ratios carry over to other machines.

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/bench/broker"
	"kbroker/bench/stats"
	"kbroker/bench/workload"
	"kbroker/internal/cluster/etcdtest"
)

// replConfig are the replication cases' knobs.
type replConfig struct {
	pairs     int    // R1, R3: pairs of runs, order alternating
	kills     int    // R2: kill -9s of the leader
	terms     int    // R2: SIGTERMs (controlled shutdowns) of the leader
	sessionMs int    // R2: metadata.etcd.session.timeout.ms of the cluster
	r3MiB     int    // R3: preloaded partition size
	props     string // extra server.properties lines of every cluster broker, comma-separated
}

func (c *adminConfig) registerReplFlags() {
	flag.IntVar(&c.repl.pairs, "repl-pairs", 2, "admin suite: R1 and R3 pairs of runs (single broker vs cluster, order alternating)")
	flag.IntVar(&c.repl.kills, "r2-kills", 20, "admin suite: R2 kill -9s of a partition leader")
	flag.IntVar(&c.repl.terms, "r2-terms", 10, "admin suite: R2 SIGTERMs (controlled shutdowns) of a partition leader")
	flag.IntVar(&c.repl.sessionMs, "r2-session-ms", 10000, "admin suite: R2 metadata.etcd.session.timeout.ms (kbroker's default 10000); the kill -9 goal is this + 1 s")
	flag.StringVar(&c.repl.props, "repl-props", "", "admin suite: extra server.properties lines (comma-separated key=value) for every broker of the R1–R3 clusters, e.g. replica.fetch.backoff.ms=100")
	flag.IntVar(&c.repl.r3MiB, "r3-mib", 1024, "admin suite: R3 preloaded partition size the follower catches up on, MiB (B2 of the same run fetches as much)")
}

func (c *adminConfig) applyReplQuick(q func(string, func())) {
	q("repl-pairs", func() { c.repl.pairs = 1 })
	q("r2-kills", func() { c.repl.kills = 3 })
	q("r2-terms", func() { c.repl.terms = 3 })
	q("r2-session-ms", func() { c.repl.sessionMs = 2000 })
	q("r3-mib", func() { c.repl.r3MiB = 32 })
}

// replCluster is one etcd and n kbroker processes registered in it. A
// broker keeps its directory and port across restarts, so a killed broker
// comes back with its log as a restarted Kafka broker does.
type replCluster struct {
	s       *adminSuite
	dir     string
	etcd    *etcdtest.Etcd
	props   []string
	brokers []*broker.Broker // brokers[i] is node.id i+1; nil while it is down
	ports   []int
}

func (s *adminSuite) startCluster(ctx context.Context, n int, props ...string) (*replCluster, error) {
	dir, err := os.MkdirTemp(s.tmp, "repl-")
	if err != nil {
		return nil, err
	}
	etcd, err := etcdtest.New(filepath.Join(dir, "etcd"), "")
	if err != nil {
		return nil, err
	}
	if err := etcd.Start(); err != nil {
		return nil, err
	}
	if s.o.ad.repl.props != "" {
		props = append(props, strings.Split(s.o.ad.repl.props, ",")...)
	}
	c := &replCluster{s: s, dir: dir, etcd: etcd, props: props, brokers: make([]*broker.Broker, n), ports: make([]int, n)}
	for id := 1; id <= n; id++ {
		if err := c.start(ctx, id); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

func (c *replCluster) start(ctx context.Context, id int) error {
	props := append([]string{"node.id=" + strconv.Itoa(id), "metadata.etcd.endpoints=" + c.etcd.Endpoint()}, c.props...)
	b, err := broker.StartWith(ctx, broker.Kbroker, c.s.r.bins, c.s.tmp, broker.StartOptions{
		Dir: filepath.Join(c.dir, "broker-"+strconv.Itoa(id)), Props: props, Port: c.ports[id-1], Metrics: c.s.o.ad.profileDir != "",
	})
	if err != nil {
		return err
	}
	c.brokers[id-1], c.ports[id-1] = b, b.Port()
	return nil
}

// stop stops the brokers (SIGTERM: each moves its leaderships off first),
// then etcd, and removes everything.
func (c *replCluster) stop() {
	for _, b := range c.brokers {
		if b != nil {
			b.Stop()
		}
	}
	c.etcd.Stop()
	os.RemoveAll(c.dir)
}

// seeds are every broker's address, live or not: ports are kept, so a
// restarted broker is found where it was.
func (c *replCluster) seeds() []string {
	var out []string
	for _, p := range c.ports {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

// cpu is the brokers' CPU seconds so far, summed; a broker that is down
// counts zero, so only compare readings taken with the same brokers up.
func (c *replCluster) cpu() float64 {
	var sum float64
	for _, b := range c.brokers {
		if b != nil {
			if v, err := broker.CPUSeconds(b.Pid()); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// createTopic creates a one-partition topic with the given replicas (the
// first one leads) and configs, through a raw CreateTopics so the
// assignment is exact.
func createTopic(ctx context.Context, seeds []string, topic string, replicas []int32, configs map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		msg := ""
		if t.ErrorMessage != nil {
			msg = *t.ErrorMessage
		}
		return fmt.Errorf("create topic %s: %w %s", topic, err, msg)
	}
	return nil
}

// partitionState is partition 0 of topic as Metadata reports it.
func partitionState(ctx context.Context, adm *kadm.Client, topic string) (leader int32, isr []int32, err error) {
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	md, err := adm.Metadata(mctx, topic)
	if err != nil {
		return -1, nil, err
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return -1, nil, fmt.Errorf("metadata of %s: %v", topic, t.Err)
	}
	p := t.Partitions[0]
	return p.Leader, p.ISR, p.Err
}

// waitISR polls until partition 0 of topic has a leader and want replicas
// in its ISR.
func waitISR(ctx context.Context, adm *kadm.Client, topic string, want int, limit time.Duration) (int32, error) {
	deadline := time.Now().Add(limit)
	for {
		leader, isr, err := partitionState(ctx, adm, topic)
		if err == nil && leader >= 0 && len(isr) >= want {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("%s: ISR %v (leader %d) did not reach %d replicas within %s (last error %v)", topic, isr, leader, want, limit, err)
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// r1Run is one R1 run pair member: throughput and latency of one side.
type r1Run struct {
	MBps, P50us, P99us, P999us float64
	// Cores is every broker's CPU over the produce run (warm-up included)
	// ÷ its wall time: the single broker's, or the three brokers' summed.
	Cores float64
	Err   string `json:",omitempty"`
}

// caseR1 is acks=all RF 3 on three brokers against acks=1 RF 1 on one.
func (s *adminSuite) caseR1(ctx context.Context, sec *section) error {
	sec.title = "R1 / issue 17 — acks=all RF 3 on three brokers ÷ acks=1 RF 1 on one broker"
	pc := s.o.pc
	produce := workload.Spec{Kind: workload.KindProduce, RecordBytes: 1024, Warmup: pc.warmup, Duration: pc.produceDur}
	latency := workload.Spec{Kind: workload.KindLatency, RecordBytes: 1024, Warmup: pc.warmup / 2, Duration: pc.latencyDur}
	var single, cluster []r1Run
	for pair := range s.o.ad.repl.pairs {
		order := []bool{false, true} // false: single broker
		if pair%2 == 1 {
			order = []bool{true, false}
		}
		for _, rf3 := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var run r1Run
			var err error
			if rf3 {
				run, err = s.r1Cluster(ctx, produce, latency)
			} else {
				run, err = s.r1Single(ctx, produce, latency)
			}
			if err != nil {
				run = r1Run{MBps: math.NaN(), P50us: math.NaN(), P99us: math.NaN(), P999us: math.NaN(), Cores: math.NaN(), Err: oneLine(err.Error())}
			}
			name := map[bool]string{false: "acks=1 RF 1", true: "acks=all RF 3"}[rf3]
			fmt.Fprintf(os.Stderr, "kbench: R1 pair %d %s: %.1f MB/s, p99 %.0f µs %s\n", pair+1, name, run.MBps, run.P99us, run.Err)
			if rf3 {
				cluster = append(cluster, run)
			} else {
				single = append(single, run)
			}
		}
	}
	col := func(rs []r1Run, f func(r1Run) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	sec.printf("Side 1: one kbroker (bbolt), a 1-partition RF 1 topic, B1's producer (1 KiB records, acks=1, idempotence off, so one "+
		"produce request in flight, linger 0) for %s after %s warm-up, then B3's serial ProduceSync for %s. Side 2: one etcd embedded in "+
		"kbench and three `kbroker serve` processes, a 1-partition topic with replicas [1,2,3] and `min.insync.replicas=2`, the same "+
		"producers with acks=all. Each side on fresh brokers per pair, %d pair(s), order alternating; the load runs in a worker process. "+
		"Every broker, etcd and the load share the machine's %d cores.\n\n", pc.produceDur, pc.warmup, pc.latencyDur, len(single), runtime.NumCPU())
	sec.printf("| metric | acks=1 RF 1 (median) | acks=all RF 3 (median) | RF 3 ÷ RF 1 (median of pair ratios) | pairs | goal |\n|---|---:|---:|---:|---:|---|\n")
	row := func(name, format string, f func(r1Run) float64, goal func(float64) string) float64 {
		a, b := col(cluster, f), col(single, f)
		ratio, n := stats.RatioMedian(a, b)
		g := ""
		if goal != nil && n > 0 {
			g = goal(ratio)
		}
		sec.printf("| %s | %s | %s | %s | %d | %s |\n", name, num(format, stats.Median(b)), num(format, stats.Median(a)), num("%.2f", ratio), n, g)
		return ratio
	}
	tput := row("MB/s acknowledged (1 KiB, one request in flight)", "%.1f", func(r r1Run) float64 { return r.MBps }, func(x float64) string { return "≥ 0.45 — " + verdict(x >= 0.45) })
	row("serial produce p50 µs", "%.0f", func(r r1Run) float64 { return r.P50us }, nil)
	p99 := row("serial produce p99 µs", "%.0f", func(r r1Run) float64 { return r.P99us }, func(x float64) string { return "≤ 3 — " + verdict(x <= 3) })
	row("serial produce p99.9 µs", "%.0f", func(r r1Run) float64 { return r.P999us }, nil)
	row("broker CPU (cores, all brokers, produce run)", "%.2f", func(r r1Run) float64 { return r.Cores }, nil)
	for i, r := range append(slices.Clone(single), cluster...) {
		if r.Err != "" {
			sec.printf("\nFailed run %d: `%s`\n", i+1, r.Err)
		}
	}
	sec.printf("\nGoals (issue 17): throughput ratio ≥ 0.45: %.2f — %s; p99 ≤ 3× acks=1's: %.2f× — %s.\n",
		tput, verdict(tput >= 0.45), p99, verdict(p99 <= 3))
	s.json["R1"] = map[string]any{"single": jsonSafe(single), "cluster": jsonSafe(cluster)}
	return nil
}

func (s *adminSuite) r1Single(ctx context.Context, produce, latency workload.Spec) (r1Run, error) {
	b, err := s.start(ctx)
	if err != nil {
		return r1Run{}, err
	}
	defer b.Stop()
	cpu := func() float64 { v, _ := broker.CPUSeconds(b.Pid()); return v }
	return s.r1Load(ctx, []string{b.Addr}, b, cpu, nil, false, produce, latency, []*broker.Broker{b})
}

func (s *adminSuite) r1Cluster(ctx context.Context, produce, latency workload.Spec) (r1Run, error) {
	c, err := s.startCluster(ctx, 3)
	if err != nil {
		return r1Run{}, err
	}
	defer c.stop()
	return s.r1Load(ctx, c.seeds(), nil, c.cpu, []int32{1, 2, 3}, true, produce, latency, c.brokers)
}

// r1Load runs the produce and the latency workload on fresh topics. With
// replicas set, the topics get them and min.insync.replicas=2, and the
// load asks for acks=all. With -profile, each of profiled (the brokers
// serving the load) is profiled through each run.
func (s *adminSuite) r1Load(ctx context.Context, seeds []string, b *broker.Broker, cpu func() float64, replicas []int32, acksAll bool,
	produce, latency workload.Spec, profiled []*broker.Broker) (r1Run, error) {
	var run r1Run
	for i, spec := range []workload.Spec{produce, latency} {
		spec.Topic, spec.Addr, spec.AcksAll = topicName("r1"), seeds[0], acksAll
		var configs map[string]string
		reps := []int32{1}
		if replicas != nil {
			reps, configs = replicas, map[string]string{"min.insync.replicas": "2"}
		}
		if err := createTopic(ctx, seeds, spec.Topic, reps, configs); err != nil {
			return run, err
		}
		if replicas != nil {
			// Every replica in the ISR before the window: acks=all then
			// waits for all three, as in steady state.
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(10*time.Millisecond))
			if err != nil {
				return run, err
			}
			_, err = waitISR(ctx, kadm.NewClient(cl), spec.Topic, len(replicas), 30*time.Second)
			cl.Close()
			if err != nil {
				return run, err
			}
		}
		var waits []func()
		for j, pb := range profiled {
			name := fmt.Sprintf("R1-%s-%s-broker%d", spec.Kind, map[bool]string{false: "acks1", true: "acksall"}[acksAll], j+1)
			waits = append(waits, s.profile(ctx, pb, name, int((spec.Warmup+spec.Duration)/time.Second)))
		}
		c0, t0 := cpu(), time.Now()
		res, _, _, err := s.r.runLoad(ctx, spec, b)
		for _, w := range waits {
			w()
		}
		if err != nil {
			return run, err
		}
		if res.Errors > 0 {
			return run, fmt.Errorf("%d records failed: %s", res.Errors, res.FirstErr)
		}
		if i == 0 {
			run.MBps = float64(res.Bytes) / res.Seconds / 1e6
			run.Cores = (cpu() - c0) / time.Since(t0).Seconds()
		} else {
			run.P50us, run.P99us, run.P999us = res.P50us, res.P99us, res.P999us
		}
	}
	return run, nil
}

// r2Outage is one leader stop of R2, in milliseconds from the signal.
type r2Outage struct {
	Signal string
	Leader int32
	// Unavailable: the longest a produce waited, from the signal (or the
	// last success after it) to the next acknowledged produce, until the
	// first success after the process exited.
	Unavailable float64
	// Exited: signal → the process was gone (kill -9: immediate; SIGTERM:
	// the controlled shutdown).
	Exited float64
	// NewLeader: signal → Metadata from a surviving broker first names
	// another leader (polled every 10 ms), the broker side of the outage.
	NewLeader float64
	// Controller: the stopped leader was also the controller, so a new
	// controller had to be elected before it could elect a leader.
	Controller bool
}

// caseR2 is unavailability after kill -9 and SIGTERM of a partition leader.
func (s *adminSuite) caseR2(ctx context.Context, sec *section) error {
	sec.title = "R2 / issue 17 — unavailability after kill -9 and SIGTERM of a partition leader"
	rc := s.o.ad.repl
	c, err := s.startCluster(ctx, 3, "metadata.etcd.session.timeout.ms="+strconv.Itoa(rc.sessionMs))
	if err != nil {
		return err
	}
	defer c.stop()
	topic := topicName("r2")
	if err := createTopic(ctx, c.seeds(), topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"}); err != nil {
		return err
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := waitISR(ctx, adm, topic, 3, 30*time.Second); err != nil {
		return err
	}

	// One serial acks=all producer for the whole case. kgo's metadata
	// floor (MetadataMinAge, 5 s by default) and retry backoff are cut to
	// 50 ms so that the client's own timers do not make up the outage;
	// records are retried until they succeed.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ProduceRequestTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer closeClient(pcl)
	var mu sync.Mutex
	// An acknowledgement and when its ProduceSync was called: a response
	// the killed leader wrote just before the kill still arrives after it,
	// so the outage ends only with a produce sent after the process died.
	type ack struct{ sent, acked time.Time }
	var acks []ack
	var produceErr error
	pctx, stopProduce := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		value := make([]byte, 1024)
		for pctx.Err() == nil {
			sent := time.Now()
			err := pcl.ProduceSync(pctx, &kgo.Record{Value: value}).FirstErr()
			mu.Lock()
			if err == nil {
				acks = append(acks, ack{sent, time.Now()})
			} else if pctx.Err() == nil && produceErr == nil {
				produceErr = err
			}
			mu.Unlock()
		}
	}()
	defer func() { stopProduce(); <-produced }()
	// firstAckAfter waits for an acknowledgement of a produce sent after t.
	firstAckAfter := func(t time.Time, limit time.Duration) error {
		deadline := time.Now().Add(limit)
		for {
			mu.Lock()
			ok := len(acks) > 0 && acks[len(acks)-1].sent.After(t)
			perr := produceErr
			mu.Unlock()
			if ok {
				return nil
			}
			if perr != nil {
				return fmt.Errorf("produce: %w", perr)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no produce succeeded within %s", limit)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if err := firstAckAfter(time.Now(), 30*time.Second); err != nil {
		return err
	}

	outageLimit := time.Duration(rc.sessionMs)*time.Millisecond + 60*time.Second
	one := func(sig syscall.Signal) (r2Outage, error) {
		leader, err := waitISR(ctx, adm, topic, 3, 60*time.Second)
		if err != nil {
			return r2Outage{}, err
		}
		b := c.brokers[leader-1]
		o := r2Outage{Signal: map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig], Leader: leader}
		// Watch the partition from a survivor while the leader stops.
		var survivors []string
		for i, p := range c.ports {
			if int32(i+1) != leader {
				survivors = append(survivors, "127.0.0.1:"+strconv.Itoa(p))
			}
		}
		// kadm's Metadata is answered from kgo's cache for MetadataMinAge
		// (5 s by default), which would hide when the leader changed.
		wcl, err := kgo.NewClient(kgo.SeedBrokers(survivors...), kgo.MetadataMinAge(10*time.Millisecond))
		if err != nil {
			return o, err
		}
		defer wcl.Close()
		wadm := kadm.NewClient(wcl)
		if _, _, err := partitionState(ctx, wadm, topic); err != nil { // connect before the clock starts
			return o, err
		}
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		md, err := adm.BrokerMetadata(mctx)
		cancel()
		if err != nil {
			return o, err
		}
		o.Controller = md.Controller == leader
		t0 := time.Now()
		if err := b.Signal(sig); err != nil {
			return o, err
		}
		newLeader := make(chan float64, 1)
		go func() {
			for time.Since(t0) < outageLimit && ctx.Err() == nil {
				if l, _, err := partitionState(ctx, wadm, topic); err == nil && l >= 0 && l != leader {
					newLeader <- ms(time.Since(t0))
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			newLeader <- math.NaN()
		}()
		select {
		case <-b.Exited():
		case <-time.After(outageLimit):
			return o, fmt.Errorf("broker %d did not exit within %s of %v", leader, outageLimit, sig)
		}
		exited := time.Now()
		o.Exited = ms(exited.Sub(t0))
		b.Stop()
		c.brokers[leader-1] = nil
		if err := firstAckAfter(exited, outageLimit); err != nil {
			return o, err
		}
		mu.Lock()
		prev := t0
		for _, a := range acks {
			if !a.acked.After(t0) {
				continue
			}
			o.Unavailable = math.Max(o.Unavailable, ms(a.acked.Sub(prev)))
			prev = a.acked
			if a.sent.After(exited) {
				break
			}
		}
		mu.Unlock()
		o.NewLeader = <-newLeader
		// Back on its data and port, and into the ISR before the next stop.
		if err := c.start(ctx, int(leader)); err != nil {
			return o, err
		}
		return o, nil
	}
	var kills, terms []r2Outage
	for i := range rc.kills + rc.terms {
		if ctx.Err() != nil {
			break
		}
		sig := syscall.SIGKILL
		if i >= rc.kills {
			sig = syscall.SIGTERM
		}
		o, err := one(sig)
		if err != nil {
			return fmt.Errorf("%s %d: %w", sig, i+1, err)
		}
		fmt.Fprintf(os.Stderr, "kbench: R2 %s of leader %d (controller %v): unavailable %.0f ms (exited %.0f ms, new leader in metadata %.0f ms)\n",
			o.Signal, o.Leader, o.Controller, o.Unavailable, o.Exited, o.NewLeader)
		if sig == syscall.SIGKILL {
			kills = append(kills, o)
		} else {
			terms = append(terms, o)
		}
	}
	col := func(os []r2Outage, f func(r2Outage) float64) []float64 {
		out := make([]float64, len(os))
		for i, o := range os {
			out[i] = f(o)
		}
		return out
	}
	sec.printf("One etcd embedded in kbench, three `kbroker serve` processes with `metadata.etcd.session.timeout.ms=%d`, a "+
		"1-partition topic with replicas [1,2,3] and `min.insync.replicas=2`. One kgo producer sends 1 KiB records with acks=all, "+
		"one ProduceSync at a time, for the whole case (MetadataMinAge and retry backoff 50 ms, so kgo's 5 s metadata floor does "+
		"not make up the outage). Each time the partition's current leader (with all three replicas in the ISR) gets the signal; "+
		"**unavailable** = the longest gap without an acknowledgement, from the signal to the first acknowledgement "+
		"of a produce sent after the process had gone; **new leader** = signal → Metadata from a surviving broker names another leader (polled "+
		"every 10 ms). The stopped broker is then restarted on its data and port and rejoins the ISR before the next stop.\n\n", rc.sessionMs)
	sec.printf(pctHeader)
	sec.printf("%s", pctRow("kill -9: unavailable (ms)", col(kills, func(o r2Outage) float64 { return o.Unavailable }), "%.0f"))
	sec.printf("%s", pctRow("kill -9: new leader in metadata (ms)", col(kills, func(o r2Outage) float64 { return o.NewLeader }), "%.0f"))
	var ctrl, plain []r2Outage
	for _, o := range kills {
		if o.Controller {
			ctrl = append(ctrl, o)
		} else {
			plain = append(plain, o)
		}
	}
	sec.printf("%s", pctRow("kill -9 of a leader that was also the controller: unavailable (ms)", col(ctrl, func(o r2Outage) float64 { return o.Unavailable }), "%.0f"))
	sec.printf("%s", pctRow("kill -9 of a leader that was not the controller: unavailable (ms)", col(plain, func(o r2Outage) float64 { return o.Unavailable }), "%.0f"))
	sec.printf("%s", pctRow("SIGTERM: unavailable (ms)", col(terms, func(o r2Outage) float64 { return o.Unavailable }), "%.0f"))
	sec.printf("%s", pctRow("SIGTERM: new leader in metadata (ms)", col(terms, func(o r2Outage) float64 { return o.NewLeader }), "%.0f"))
	sec.printf("%s", pctRow("SIGTERM: signal → process exited (ms)", col(terms, func(o r2Outage) float64 { return o.Exited }), "%.0f"))
	var goals []string
	if len(kills) > 0 {
		_, _, p99, _ := pct(col(kills, func(o r2Outage) float64 { return o.Unavailable }))
		limit := float64(rc.sessionMs + 1000)
		goals = append(goals, fmt.Sprintf("kill -9 p99 ≤ session timeout + 1 s = %.0f ms: %.0f ms over %d kills — %s", limit, p99, len(kills), verdict(p99 <= limit)))
	}
	if len(terms) > 0 {
		_, _, p99, _ := pct(col(terms, func(o r2Outage) float64 { return o.Unavailable }))
		goals = append(goals, fmt.Sprintf("SIGTERM ≤ 1 s: p99 %.0f ms over %d — %s", p99, len(terms), verdict(p99 <= 1000)))
	}
	for _, g := range goals {
		sec.printf("\nGoal (issue 17): %s.\n", g)
	}
	s.json["R2"] = map[string]any{"sessionTimeoutMs": rc.sessionMs, "kills": jsonSafe(kills), "terms": jsonSafe(terms)}
	return nil
}

// r3Run is one R3 pair: B2's fetch and a follower's catch-up of the same
// size.
type r3Run struct {
	FetchMBps   float64 // B2: record value MB/s a consumer fetched
	CatchupMBps float64 // record value MB/s the new follower copied
	CatchupSecs float64 // reassignment sent → follower's log as large as the leader's
	ISRSecs     float64 // reassignment sent → follower in the ISR (Metadata)
	LogBytes    int64   // the leader's log size (DescribeLogDirs)
	Cores       float64 // both brokers' CPU during the catch-up ÷ its seconds
	Err         string  `json:",omitempty"`
}

// caseR3 is follower catch-up of a preloaded partition against B2.
func (s *adminSuite) caseR3(ctx context.Context, sec *section) error {
	sec.title = "R3 / issue 17 — follower catch-up of a preloaded partition ÷ B2 fetch"
	size := int64(s.o.ad.repl.r3MiB) << 20
	var runs []r3Run
	for pair := range s.o.ad.repl.pairs {
		var run r3Run
		fetchFirst := pair%2 == 0
		for _, fetch := range []bool{fetchFirst, !fetchFirst} {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fetch {
				spec := workload.Spec{Kind: workload.KindFetch, RecordBytes: 1024, PreloadBytes: size, FetchMaxBytes: s.o.pc.fetchMax, Topic: topicName("r3b2")}
				rr := s.r.runBroker(ctx, broker.Kbroker, spec, benchCase{})
				if rr.Err != "" {
					run.Err = oneLine(rr.Err)
					run.FetchMBps = math.NaN()
					continue
				}
				run.FetchMBps = float64(rr.Result.Bytes) / rr.Result.Seconds / 1e6
			} else if err := s.r3Catchup(ctx, size, &run); err != nil {
				run.Err = oneLine(err.Error())
				run.CatchupMBps = math.NaN()
			}
		}
		fmt.Fprintf(os.Stderr, "kbench: R3 pair %d: B2 %.1f MB/s, catch-up %.1f MB/s in %.2fs %s\n", pair+1, run.FetchMBps, run.CatchupMBps, run.CatchupSecs, run.Err)
		runs = append(runs, run)
	}
	col := func(f func(r3Run) float64) []float64 {
		out := make([]float64, len(runs))
		for i, r := range runs {
			out[i] = f(r)
		}
		return out
	}
	ratio, n := stats.RatioMedian(col(func(r r3Run) float64 { return r.CatchupMBps }), col(func(r r3Run) float64 { return r.FetchMBps }))
	sec.printf("Catch-up: one etcd embedded in kbench and two `kbroker serve` processes (default `replica.fetch.*`: 1 MiB per "+
		"partition, 10 MiB per fetch); a 1-partition topic on broker 1 alone gets %d MiB of 1 KiB records (B1's producer, "+
		"acks=1, not measured); then AlterPartitionReassignments makes the replicas [1,2] and the clock runs until "+
		"DescribeLogDirs on broker 2 reports a log as large as the leader's (polled every 20 ms), and until Metadata shows broker 2 "+
		"in the ISR. MB/s = record value bytes ÷ catch-up seconds, as B2 counts them. B2: a fresh single kbroker, the same preload, "+
		"one consumer with FetchMaxBytes %d MiB, in the same pair; %d pair(s), order alternating.\n\n", size>>20, s.o.pc.fetchMax>>20, len(runs))
	sec.printf("| pair | B2 fetch MB/s | catch-up MB/s | catch-up s | in ISR s | leader log MiB | broker CPU (cores, both, catch-up) | catch-up ÷ B2 |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range runs {
		sec.printf("| %d | %.1f | %.1f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", i+1, r.FetchMBps, r.CatchupMBps, r.CatchupSecs, r.ISRSecs,
			float64(r.LogBytes)/mib, r.Cores, r.CatchupMBps/r.FetchMBps)
		if r.Err != "" {
			sec.printf("\nPair %d failed: `%s`\n", i+1, r.Err)
		}
	}
	sec.printf("\nGoal (issue 17): catch-up ≥ 0.5 of B2 (median of pair ratios, %d pair(s)): %.2f — %s.\n", n, ratio, verdict(n > 0 && ratio >= 0.5))
	s.json["R3"] = jsonSafe(runs)
	return nil
}

func (s *adminSuite) r3Catchup(ctx context.Context, size int64, run *r3Run) error {
	c, err := s.startCluster(ctx, 2)
	if err != nil {
		return err
	}
	defer c.stop()
	topic := topicName("r3")
	seeds := c.seeds()
	if err := createTopic(ctx, seeds, topic, []int32{1}, nil); err != nil {
		return err
	}
	if _, _, err := workload.Preload(ctx, workload.Spec{Addr: c.brokers[0].Addr, Topic: topic, RecordBytes: 1024, PreloadBytes: size}); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	logSize := func(id int32) (int64, error) {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		dirs, err := adm.DescribeBrokerLogDirs(lctx, id, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return 0, err
		}
		var sz int64 = -1
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic && p.Partition == 0 {
				sz = p.Size
			}
		})
		return sz, nil
	}
	leaderSize, err := logSize(1)
	if err != nil || leaderSize <= 0 {
		return fmt.Errorf("leader log size %d: %v", leaderSize, err)
	}
	run.LogBytes = leaderSize

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{1, 2})
	c0, t0 := c.cpu(), time.Now()
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	if err := resps.Error(); err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	limit := time.Duration(float64(size)/1e6)*time.Second + 60*time.Second // 1 MB/s at worst
	for run.CatchupSecs == 0 || run.ISRSecs == 0 {
		if time.Since(t0) > limit {
			return fmt.Errorf("follower did not catch up within %s (caught up after %.1fs, in ISR after %.1fs)", limit, run.CatchupSecs, run.ISRSecs)
		}
		if run.CatchupSecs == 0 {
			if sz, err := logSize(2); err == nil && sz >= leaderSize {
				run.CatchupSecs = time.Since(t0).Seconds()
				run.Cores = (c.cpu() - c0) / run.CatchupSecs
			}
		}
		if run.ISRSecs == 0 {
			if _, isr, err := partitionState(ctx, adm, topic); err == nil && slices.Contains(isr, 2) {
				run.ISRSecs = time.Since(t0).Seconds()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	run.CatchupMBps = float64(size/1024*1024) / run.CatchupSecs / 1e6
	return nil
}

// jsonSafe returns rs as JSON values with NaN (a failed or missing
// measurement) as null, which encoding/json would otherwise refuse, losing
// the whole -json file.
func jsonSafe[T any](rs []T) []any {
	out := make([]any, len(rs))
	for i, r := range rs {
		m := map[string]any{}
		v := reflect.ValueOf(r)
		for j := range v.NumField() {
			f := v.Field(j)
			if f.Kind() == reflect.Float64 {
				m[v.Type().Field(j).Name] = jfloat(f.Float())
			} else {
				m[v.Type().Field(j).Name] = f.Interface()
			}
		}
		out[i] = m
	}
	return out
}

func closeClient(cl *kgo.Client) {
	done := make(chan struct{})
	go func() { cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
