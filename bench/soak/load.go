package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/bench/broker"
)

// soak is one run: the broker, the load and what was measured.
type soak struct {
	o        options
	b        *broker.Broker
	admin    *kadm.Client
	topicIDs [][16]byte
	started  time.Time

	producerQuota counter // producer_byte_rate of prodQuota now
	quotaChanged  counter // unix nanos of its last change

	changes, changeErrs                       counter
	intrusions, breaches, oddRefusals         counter
	producedBytes, producedRecords, prodErrs  counter
	consumedBytes, consumedRecords, consErrs  counter
	quotaProduceWire, quotaFetchWire, throttl counter
	lastProdErr, lastConsErr                  sync.Map // "last" → error text

	mu        sync.Mutex
	producers []*loadClient
	consumers []*loadClient
	generated int // clients created, for unique client ids

	samples                   []sample
	goroutinesBefore, rssBase float64
	goroutinesAfter, connsEnd float64
	settledIn                 time.Duration // from the last client's close to goroutinesAfter
}

// loadClient is one producer or consumer: its own kgo client and
// connections, run by one goroutine until stopped.
type loadClient struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *loadClient) stop() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

// quotaHook counts the wire bytes a quota'd client moves: Produce request
// bytes written (what producer_byte_rate charges) or Fetch response bytes
// read (what consumer_byte_rate charges), and the throttles it is told of.
type quotaHook struct {
	s   *soak
	key int16
}

func (h quotaHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 0 && h.key == 0 && err == nil {
		h.s.quotaProduceWire.Add(int64(n))
	}
}

func (h quotaHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && h.key == 1 && err == nil {
		h.s.quotaFetchWire.Add(int64(n))
	}
}

func (h quotaHook) OnBrokerThrottle(kgo.BrokerMetadata, time.Duration, bool) { h.s.throttl.Add(1) }

// runLoad starts every client, runs the changes and samples until the
// duration is over (or ctx ends), then stops the clients and records how
// the broker settles.
func (s *soak) runLoad(ctx context.Context) error {
	s.goroutinesBefore, s.rssBase = s.scrapeBaseline()
	progress("starting %d producers and %d consumers", s.o.producers, s.o.consumers)
	for i := range s.o.producers {
		p, err := s.startProducer(ctx, i)
		if err != nil {
			return err
		}
		s.producers = append(s.producers, p)
	}
	for j := range s.o.consumers {
		c, err := s.startConsumer(ctx, j)
		if err != nil {
			return err
		}
		s.consumers = append(s.consumers, c)
	}
	progress("load running for %v (warm-up %v, samples every %v)", s.o.duration, s.o.warmup, s.o.sample)
	s.loop(ctx)
	progress("stopping the clients")
	s.mu.Lock()
	all := append(append([]*loadClient(nil), s.producers...), s.consumers...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(c.stop)
	}
	wg.Wait()
	s.admin.Close()
	return s.settle()
}

// settle waits, up to a minute, for the broker to let go of every
// connection and its goroutines, and records how long that took. A
// throttled connection is muted (KIP-219) and notices its client left
// only when the throttle ends, so this can take a few seconds.
func (s *soak) settle() error {
	start := time.Now()
	for {
		m, err := scrape(s.b.MetricsAddr)
		if err != nil {
			return err
		}
		s.goroutinesAfter, s.connsEnd = m["go_goroutines"], m["kbroker_open_connections"]
		s.settledIn = time.Since(start)
		if s.connsEnd == 0 && s.goroutinesAfter <= s.goroutinesBefore+10 || s.settledIn > time.Minute {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// loop samples and changes until the duration is over.
func (s *soak) loop(ctx context.Context) {
	end := time.After(s.o.duration)
	sampleT := time.NewTicker(s.o.sample)
	defer sampleT.Stop()
	changeT := time.NewTicker(s.o.changeEvery)
	defer changeT.Stop()
	prev := s.snapshot()
	defer s.saveProfiles(ctx, "end", "heap", "goroutine?debug=1")
	warmProfile := time.After(s.o.warmup)
	for k := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-s.b.Exited():
			progress("the broker exited")
			return
		case <-warmProfile:
			s.saveProfiles(ctx, "warm", "heap")
		case <-sampleT.C:
			cur := s.snapshot()
			s.record(prev, cur)
			prev = cur
		case <-changeT.C:
			s.changeRound(ctx, k)
			s.recycle(ctx, k)
			k++
		}
	}
}

func (s *soak) startProducer(ctx context.Context, i int) (*loadClient, error) {
	user := prodFree
	var opts []kgo.Opt
	if i%4 == 0 {
		user = prodQuota
		opts = append(opts, kgo.WithHooks(quotaHook{s, 0}))
	}
	s.mu.Lock()
	s.generated++
	id := "soak-p-" + strconv.Itoa(i) + "-" + strconv.Itoa(s.generated)
	s.mu.Unlock()
	cl, err := s.client(user, password(user), id, append(opts,
		kgo.DefaultProduceTopic(topicName(i%s.o.topics)),
		kgo.MaxBufferedRecords(2*s.o.rate),
		kgo.ProducerLinger(5*time.Millisecond),
		// Random values and no compression: the quota charges the bytes
		// on the wire, and they should be the bytes produced.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &loadClient{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		s.produce(ctx, cl)
	}()
	return c, nil
}

// produce sends records at the configured rate until ctx ends; a full
// buffer (a throttled client) slows it down.
func (s *soak) produce(ctx context.Context, cl *kgo.Client) {
	value := make([]byte, s.o.recordSize)
	for i := range value {
		value[i] = byte(rand.Uint32())
	}
	interval := time.Second / time.Duration(max(s.o.rate, 1))
	time.Sleep(rand.N(interval)) // spread the producers' ticks
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
					s.prodErrs.Add(1)
					s.lastProdErr.Store("last", err.Error())
				}
				return
			}
			s.producedRecords.Add(1)
			s.producedBytes.Add(int64(len(r.Value)))
		})
	}
}

func (s *soak) startConsumer(ctx context.Context, j int) (*loadClient, error) {
	user := consFree
	var opts []kgo.Opt
	if j%4 == 0 {
		user = consQuota
		opts = append(opts, kgo.WithHooks(quotaHook{s, 1}))
	}
	topic, part := topicName(j%s.o.topics), int32((j/s.o.topics)%s.o.partitions)
	s.mu.Lock()
	s.generated++
	id := "soak-c-" + strconv.Itoa(j) + "-" + strconv.Itoa(s.generated)
	s.mu.Unlock()
	cl, err := s.client(user, password(user), id, append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &loadClient{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
					s.consErrs.Add(1)
					s.lastConsErr.Store("last", err.Error())
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				s.consumedRecords.Add(1)
				s.consumedBytes.Add(int64(len(r.Value)))
			})
		}
	}()
	return c, nil
}

// recycle replaces churn producers and consumers with new clients: new
// connections and SCRAM handshakes, the old ones torn down.
func (s *soak) recycle(ctx context.Context, k int) {
	for n := range s.o.churn {
		if i := (k*s.o.churn + n) % max(len(s.producers), 1); len(s.producers) > 0 {
			s.producers[i].stop()
			p, err := s.startProducer(ctx, i)
			if err != nil {
				progress("recycle producer %d: %v", i, err)
				continue
			}
			s.mu.Lock()
			s.producers[i] = p
			s.mu.Unlock()
		}
		if j := (k*s.o.churn + n) % max(len(s.consumers), 1); len(s.consumers) > 0 {
			s.consumers[j].stop()
			c, err := s.startConsumer(ctx, j)
			if err != nil {
				progress("recycle consumer %d: %v", j, err)
				continue
			}
			s.mu.Lock()
			s.consumers[j] = c
			s.mu.Unlock()
		}
	}
}

// saveProfiles writes the broker's pprof profiles named in which to
// -profiles, as <which>-<when>.pprof; nothing without -profiles. Compare
// two heap profiles with go tool pprof -diff_base.
func (s *soak) saveProfiles(ctx context.Context, when string, which ...string) {
	if s.o.profiles == "" {
		return
	}
	if err := os.MkdirAll(s.o.profiles, 0o755); err != nil {
		progress("profiles: %v", err)
		return
	}
	for _, w := range which {
		name, _, _ := strings.Cut(w, "?")
		path := filepath.Join(s.o.profiles, name+"-"+when+".pprof")
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := s.b.Profile(ctx, w, path)
		cancel()
		if err != nil {
			progress("profile %s: %v", w, err)
			continue
		}
		progress("saved %s", path)
	}
}

func (s *soak) scrapeBaseline() (goroutines, rss float64) {
	m, err := scrape(s.b.MetricsAddr)
	if err != nil {
		progress("baseline scrape: %v", err)
		return 0, 0
	}
	return m["go_goroutines"], m["process_resident_memory_bytes"]
}

func errText(m *sync.Map) string {
	if v, ok := m.Load("last"); ok {
		return fmt.Sprint(v)
	}
	return ""
}
