package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/bench/admin"
	"kbroker/bench/stats"
	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

// TestScaleFigures measures issue 18's many-partitions figures on the
// kbroker binary, run as its own process so that its RSS and start are its
// own: 100,000 partitions in the metadata image (10,000 topics × 10), of
// which 10,000 are written. It is a measurement, not a check, and takes
// minutes: it runs only when asked,
//
//	KBROKER_SCALE_FIGURES=1 go test ./test/scale -run TestScaleFigures -v -timeout 60m
//
// KBROKER_SCALE_TOPICS (10000) and KBROKER_SCALE_WRITTEN_TOPICS (1000)
// change the sizes; every topic has 10 partitions.
func TestScaleFigures(t *testing.T) {
	if os.Getenv("KBROKER_SCALE_FIGURES") == "" {
		t.Skip("a measurement of minutes: set KBROKER_SCALE_FIGURES=1")
	}
	topics := envInt(t, "KBROKER_SCALE_TOPICS", 10000)
	written := min(envInt(t, "KBROKER_SCALE_WRITTEN_TOPICS", 1000), topics)
	const perTopic = 10
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	b := testbin.NewBroker(t, nil)
	p := b.Start(t)
	report := func(name string, format string, args ...any) { t.Logf("%-48s %s", name, fmt.Sprintf(format, args...)) }
	rssEmpty := rss(t, p.Pid())
	report("RSS, no topic", "%.1f MiB", mib(rssEmpty))

	// CreateTopics: 1,000 topics × 10 partitions per request.
	create, err := admin.CreatePartitionedTopics(ctx, p.Addr, "scale", topics, perTopic, 1000)
	if err != nil {
		t.Fatal(err)
	}
	pc := stats.Percentiles(create.Ms, 0.5, 1)
	report(fmt.Sprintf("CreateTopics of %d partitions (%d requests)", 1000*perTopic, len(create.Ms)), "p50 %.0f ms, max %.0f ms", pc[0], pc[1])
	partitions := topics * perTopic
	rssIdle := rss(t, p.Pid())
	report(fmt.Sprintf("RSS, %d idle partitions", partitions), "%.1f MiB: %.2f MiB per 1,000", mib(rssIdle), mib(rssIdle-rssEmpty)*1000/float64(partitions))

	metadata := func(when string) {
		md, err := admin.MetadataAll(ctx, p.Addr, 20)
		if err != nil {
			t.Fatal(err)
		}
		pm := stats.Percentiles(md.Ms, 0.5, 0.99)
		report("Metadata of all topics "+when, "p50 %.0f ms, p99 %.0f ms, %d partitions, %.1f MiB", pm[0], pm[1], md.Items, mib(md.ResponseBytes))
	}
	metadata("")
	dc, err := admin.DescribeTopicConfigs(ctx, p.Addr, "scale", topics, 5)
	if err != nil {
		t.Fatal(err)
	}
	pd := stats.Percentiles(dc.Ms, 0.5, 1)
	report(fmt.Sprintf("DescribeConfigs of %d topics (all configs)", topics), "p50 %.0f ms, max %.0f ms, %d entries, %.1f MiB", pd[0], pd[1], dc.Items, mib(dc.ResponseBytes))

	// Produce: the first write of each partition creates its log
	// directory and files (synced at the log's first record fsync), a cost of its own; then the same
	// bytes round-robin over all written partitions and over 10.
	var many []topicPartition
	for i := range written {
		for p := range int32(perTopic) {
			many = append(many, topicPartition{fmt.Sprintf("scale-%07d", i), p})
		}
	}
	first := produce(t, ctx, p.Addr, many, 1)
	report(fmt.Sprintf("first write to %d partitions", len(many)), "%.1f s (%.2f ms per partition)", first.Seconds(), float64(first.Milliseconds())/float64(len(many)))
	// The broker's CPU is reported beside the rate: on shared cores the
	// client's work for thousands of partitions bounds the rate too.
	perPartition := envInt(t, "KBROKER_SCALE_RECORDS_PER_PARTITION", 4)
	self := os.Getpid() // the client: kgo runs in this test process
	cpu0, client0 := cpuOf(t, p.Pid()), cpuOf(t, self)
	roundRobin := produce(t, ctx, p.Addr, many, perPartition)
	cpu1, client1 := cpuOf(t, p.Pid()), cpuOf(t, self)
	ten := produce(t, ctx, p.Addr, many[:10], perPartition*len(many)/10)
	cpu2, client2 := cpuOf(t, p.Pid()), cpuOf(t, self)
	mb := float64(perPartition*len(many)*recordBytes) / 1e6
	msPerMB := func(d time.Duration) float64 { return float64(d.Milliseconds()) / mb }
	report(fmt.Sprintf("produce %.0f MB round-robin to %d partitions", mb, len(many)), "%.1f MB/s, broker CPU %.1f ms per MB, client %.1f", mb/roundRobin.Seconds(), msPerMB(cpu1-cpu0), msPerMB(client1-client0))
	report(fmt.Sprintf("produce %.0f MB to 10 partitions", mb), "%.1f MB/s, broker CPU %.1f ms per MB, client %.1f (rate round-robin ÷ 10: %.2f)", mb/ten.Seconds(), msPerMB(cpu2-cpu1), msPerMB(client2-client1), ten.Seconds()/roundRobin.Seconds())
	if dir := os.Getenv("KBROKER_SCALE_CPU_PROFILE"); dir != "" {
		// The broker's CPU profile of each produce, run again for a
		// profile's length (rounded up to a second) in whole rounds.
		profileProduce(t, ctx, p.MetricsAddr, filepath.Join(dir, "roundrobin.pprof"), roundRobin, func() { produce(t, ctx, p.Addr, many, perPartition) })
		profileProduce(t, ctx, p.MetricsAddr, filepath.Join(dir, "ten.pprof"), ten, func() { produce(t, ctx, p.Addr, many[:10], perPartition*len(many)/10) })
	}
	rssWritten := rss(t, p.Pid())
	report(fmt.Sprintf("RSS, %d partitions, %d written", partitions, len(many)), "%.1f MiB (Go heap in use %.1f MiB)", mib(rssWritten), mib(heapInUse(t, p.MetricsAddr)))
	saveHeapProfile(t, p.MetricsAddr)
	report("segment files open, descriptors", "%d", openFDsOf(t, p.Pid()))

	stopped := p.Stop(t, syscall.SIGTERM, 5*time.Minute)
	report("clean shutdown", "%.2f s", stopped.Seconds())
	start := time.Now()
	p = b.Start(t) // returns once it accepts connections
	listening := time.Since(start)
	if _, err := admin.MetadataAll(ctx, p.Addr, 1); err != nil {
		t.Fatal(err)
	}
	report(fmt.Sprintf("cold start, %d partitions (%d with data)", partitions, len(many)), "%.2f s to listen, %.2f s to the first Metadata of all topics", listening.Seconds(), time.Since(start).Seconds())
	rssCold := rss(t, p.Pid())
	report("RSS after cold start", "%.1f MiB: %.2f MiB per 1,000 partitions over the empty broker", mib(rssCold), mib(rssCold-rssEmpty)*1000/float64(partitions))
	metadata("after cold start")
}

type topicPartition struct {
	topic     string
	partition int32
}

const recordBytes = 1000

// produce writes perPartition records of recordBytes to each of parts in
// turn (round-robin) and returns how long until the last was
// acknowledged.
func produce(t *testing.T, ctx context.Context, addr string, parts []topicPartition, perPartition int) time.Duration {
	t.Helper()
	requests := &produceRequests{}
	defer func() { t.Logf("%d partitions: %s", len(parts), requests) }()
	cl, err := kgo.NewClient(kgo.WithHooks(requests), kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, recordBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range perPartition {
		for _, tp := range parts {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: tp.topic, Partition: tp.partition, Value: value}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	took := time.Since(start)
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return took
}

// produceRequests counts a client's Produce requests, their bytes and
// their time from the end of the write to the end of the response's read
// (the broker's handling and the network): with one request in flight
// per broker, as an idempotent producer keeps, the rate is the request's
// bytes over the client's and the broker's time for it.
type produceRequests struct {
	mu       sync.Mutex
	n        int
	bytes    int
	response time.Duration
}

func (p *produceRequests) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 0 { // Produce
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.bytes += e.BytesWritten
	p.response += e.ReadWait + e.TimeToRead
}

func (p *produceRequests) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return "no Produce request"
	}
	return fmt.Sprintf("%d Produce requests of %.0f KB on average, %.1f ms each from written to answered", p.n, float64(p.bytes)/float64(p.n)/1e3, float64(p.response.Microseconds())/float64(p.n)/1e3)
}

// heapInUse is the broker's go_memstats_heap_inuse_bytes.
func heapInUse(t *testing.T, metricsAddr string) int64 {
	t.Helper()
	for _, line := range strings.Split(testkit.ScrapeMetrics(t, metricsAddr), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int64(f)
		}
	}
	return -1
}

// saveHeapProfile writes the broker's heap profile (after a collection) to
// $KBROKER_SCALE_HEAP_PROFILE, when set.
func saveHeapProfile(t *testing.T, metricsAddr string) {
	t.Helper()
	path := os.Getenv("KBROKER_SCALE_HEAP_PROFILE")
	if path == "" {
		return
	}
	resp, err := http.Get("http://" + metricsAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatal(err)
	}
}

// profileProduce writes the broker's CPU profile, of took rounded up to a
// second, to path while run repeats until the profile is written; the
// client's (this process's) profile of the same rounds goes beside it,
// named client-<base of path>.
func profileProduce(t *testing.T, ctx context.Context, metricsAddr, path string, took time.Duration, run func()) {
	t.Helper()
	seconds := int(took/time.Second) + 1
	clientProfile, err := os.Create(filepath.Join(filepath.Dir(path), "client-"+filepath.Base(path)))
	if err != nil {
		t.Fatal(err)
	}
	defer clientProfile.Close()
	if err := pprof.StartCPUProfile(clientProfile); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", metricsAddr, seconds))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	for {
		run()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
	}
}

// cpuOf is the process's user and system CPU time (/proc/<pid>/stat).
func cpuOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command (which may hold spaces), from its ')':
	// state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// rss is the process's resident set (VmRSS) in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for process %d", pid)
	return 0
}

func openFDsOf(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return n
}
