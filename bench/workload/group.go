package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"kbroker/bench/stats"
)

// Group protocols a group workload can join with (Spec.GroupProtocol).
const (
	GroupClassic  = "classic"  // JoinGroup/SyncGroup/Heartbeat, kgo's default balancer
	GroupConsumer = "consumer" // KIP-848 ConsumerGroupHeartbeat (kgo.ServerSideBalancer)
)

// groupOpts are the options every member of a group workload shares.
func groupOpts(spec Spec, group string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(spec.Addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(spec.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if spec.GroupProtocol == GroupConsumer {
		// KIP-848: the broker assigns; kgo speaks it only with a
		// server-side balancer (range or sticky) and a broker that
		// advertises ConsumerGroupHeartbeat v1.
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if spec.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(spec.HeartbeatInterval))
	}
	return opts
}

// require848 fails unless the broker serves KIP-848 as kgo needs it
// (ConsumerGroupHeartbeat v1): kgo would otherwise fall back to the
// classic protocol silently, and the row would measure the wrong thing.
func require848(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) && k.MaxVersion >= 1 {
			return nil
		}
	}
	return errors.New("the broker does not serve ConsumerGroupHeartbeat v1 (KIP-848), which the consumer protocol needs")
}

// prepareGroup readies the broker for a group workload's window.
func prepareGroup(ctx context.Context, spec Spec, group string) error {
	if spec.GroupProtocol == GroupConsumer {
		if err := require848(ctx, spec.Addr); err != nil {
			return err
		}
	}
	if err := warmCoordinator(ctx, spec.Addr, group); err != nil {
		return fmt.Errorf("warming the group coordinator: %w", err)
	}
	return nil
}

// warmCoordinator waits, before a window opens, until group's coordinator
// answers an OffsetFetch: kbroker creates `__consumer_offsets` and loads
// its shards on the first group request, a once-per-cluster cost that a
// group joining a running cluster does not pay.
func warmCoordinator(ctx context.Context, addr, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = group
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil, errors.Is(err, kerr.GroupIDNotFound):
			return nil // kfake's answer for a group that has none yet
		case ctx.Err() != nil, !kerr.IsRetriable(err):
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// GroupConsume is G1: preload PreloadBytes over the topic's partitions (not
// measured), then Members consumers of one group read it all. The window
// opens as the members are created, so it includes joining the group (with
// the initial rebalance delay off), and closes when the last preloaded
// record has arrived at any member; MB/s of record values consumed.
func GroupConsume(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	n, preload, err := preloadTopic(ctx, spec)
	if err != nil {
		return Result{}, fmt.Errorf("preload: %w", err)
	}
	const group = "kbench-g1"
	if err := prepareGroup(ctx, spec, group); err != nil {
		return Result{}, err
	}
	runtime.GC()

	var res Result
	res.PreloadSeconds = preload.Seconds()
	var records, bytes atomic.Int64
	done := make(chan struct{})
	var doneOnce sync.Once
	var firstErr atomic.Value
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	mark(MarkStart)
	var wg sync.WaitGroup
	for i := range spec.Members {
		opts := append(groupOpts(spec, group),
			kgo.FetchMaxBytes(spec.FetchMaxBytes),
			kgo.FetchMaxPartitionBytes(spec.FetchMaxBytes),
			kgo.BrokerMaxReadBytes(2*spec.FetchMaxBytes),
			kgo.ClientID(fmt.Sprintf("kbench-g1-%d", i)),
		)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return Result{}, err
		}
		defer closeBounded(cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gctx.Err() == nil {
				fs := cl.PollFetches(gctx)
				fs.EachError(func(t string, p int32, err error) {
					if gctx.Err() == nil {
						firstErr.CompareAndSwap(nil, fmt.Sprintf("fetch %s[%d]: %v", t, p, err))
					}
				})
				var nr, nb int64
				fs.EachRecord(func(r *kgo.Record) { nr++; nb += int64(len(r.Value)) })
				bytes.Add(nb)
				if records.Add(nr) >= n {
					doneOnce.Do(func() { close(done) })
				}
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
		cancel()
		wg.Wait()
		return Result{}, fmt.Errorf("consumed %d of %d records: %w (first error: %v)", records.Load(), n, ctx.Err(), firstErr.Load())
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	cancel()
	wg.Wait()
	// A record delivered twice (a partition moving between members before
	// its offset was committed) is counted, as a consumer would process it.
	res.Records, res.Bytes = records.Load(), bytes.Load()
	if e, ok := firstErr.Load().(string); ok {
		res.Errors, res.FirstErr = 1, e
	}
	return res, nil
}

// Rebalance is G2: Members consumers of one new group on a topic with as
// many partitions, created at once; the window runs from their creation
// until every member holds exactly its one partition (so every member has
// its assignment and no partition is held twice, counting cooperative
// revocations). Seconds is that time; Records the members.
func Rebalance(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	var mu sync.Mutex
	owned := map[int]map[int32]bool{} // member → partitions it holds
	settled := make(chan struct{})
	var once sync.Once
	check := func() {
		if len(owned) != spec.Members {
			return
		}
		seen := map[int32]bool{}
		for _, ps := range owned {
			if len(ps) != 1 {
				return
			}
			for p := range ps {
				if seen[p] {
					return
				}
				seen[p] = true
			}
		}
		once.Do(func() { close(settled) })
	}
	group := fmt.Sprintf("kbench-g2-%d", time.Now().UnixNano())
	if err := prepareGroup(ctx, spec, group); err != nil {
		return Result{}, err
	}

	start := time.Now()
	mark(MarkStart)
	clients := make([]*kgo.Client, 0, spec.Members)
	defer func() {
		// Closed in parallel: each leaves the group, and a serial close
		// of 100 members would rebalance 99 times.
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Go(func() { closeBounded(cl) })
		}
		wg.Wait()
	}()
	for i := range spec.Members {
		opts := append(groupOpts(spec, group),
			kgo.ClientID(fmt.Sprintf("kbench-g2-%d", i)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				if owned[i] == nil {
					owned[i] = map[int32]bool{}
				}
				for _, p := range a[spec.Topic] {
					owned[i][p] = true
				}
				check()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[spec.Topic] {
					delete(owned[i], p)
				}
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range l[spec.Topic] {
					delete(owned[i], p)
				}
			}),
		)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return Result{}, err
		}
		clients = append(clients, cl)
	}
	// The members must poll for kgo to run their group (and the
	// callbacks above) past the first assignment.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, cl := range clients {
		wg.Go(func() {
			for pctx.Err() == nil {
				cl.PollFetches(pctx)
			}
		})
	}
	select {
	case <-settled:
	case <-ctx.Done():
		mu.Lock()
		n := len(owned)
		mu.Unlock()
		return Result{}, fmt.Errorf("%d of %d members assigned before: %w", n, spec.Members, ctx.Err())
	}
	res := Result{Seconds: time.Since(start).Seconds(), Records: int64(spec.Members)}
	mark(MarkEnd)
	return res, nil
}

// CommitLatency is G3: OffsetCommit requests (one partition, a simple
// commit: generation -1, no member, as admin tools and assign() consumers
// send) at CommitRate per second on one connection, each sent at its slot
// of a fixed schedule; the latency of each is from its send to its answer.
// A commit answered after its successor's slot delays the successor (the
// client waits for each answer), so a stall shows up in the following
// samples too, and the achieved rate is reported.
func CommitLatency(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	// OffsetCommit v9 on both sides: kgo would pick v10 where a broker
	// offers it (kfake), which names topics by id.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	cl, err := kgo.NewClient(kgo.SeedBrokers(spec.Addr), kgo.MaxVersions(versions))
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)
	group := "kbench-g3"
	commit := func(offset int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = spec.Topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 0, offset, -1
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("OffsetCommit answered %d topics", len(resp.Topics))
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	// Warm-up: find the coordinator and load it.
	var offset int64
	for warm := time.Now().Add(spec.Warmup); time.Now().Before(warm); offset++ {
		if err := commit(offset); err != nil {
			if ctx.Err() != nil {
				return Result{}, err
			}
			time.Sleep(10 * time.Millisecond) // COORDINATOR_LOAD_IN_PROGRESS while __consumer_offsets loads
		}
	}
	interval := time.Second / time.Duration(max(spec.CommitRate, 1))
	samples := make([]float64, 0, int(spec.Duration/interval)+1)
	var res Result
	start := time.Now()
	mark(MarkStart)
	for i := 0; ; i++ {
		slot := start.Add(time.Duration(i) * interval)
		if !slot.Before(start.Add(spec.Duration)) {
			break
		}
		if d := time.Until(slot); d > 0 {
			time.Sleep(d)
		}
		t := time.Now()
		err := commit(offset)
		lat := time.Since(t)
		offset++
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("commit run: %w", err)
			}
			res.Errors++
			if res.FirstErr == "" {
				res.FirstErr = err.Error()
			}
			continue
		}
		samples = append(samples, float64(lat.Nanoseconds())/1e3)
		res.Records++
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	if len(samples) == 0 {
		return Result{}, fmt.Errorf("no commit succeeded in the window: %d failed, first: %s", res.Errors, res.FirstErr)
	}
	p := stats.Percentiles(samples, 0.5, 0.99, 0.999)
	res.P50us, res.P99us, res.P999us = p[0], p[1], p[2]
	return res, nil
}
