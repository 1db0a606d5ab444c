package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"kbroker/bench/broker"
)

// tallies is a snapshot of the cumulative counters.
type tallies struct {
	at                                 time.Time
	prodBytes, prodRecs, prodErrs      int64
	consBytes, consRecs, consErrs      int64
	quotaProdWire, quotaFetchWire, thr int64
	cpu                                float64
}

func (s *soak) snapshot() tallies {
	cpu, _ := broker.CPUSeconds(s.b.Pid())
	return tallies{
		at: time.Now(), prodBytes: s.producedBytes.Load(), prodRecs: s.producedRecords.Load(), prodErrs: s.prodErrs.Load(),
		consBytes: s.consumedBytes.Load(), consRecs: s.consumedRecords.Load(), consErrs: s.consErrs.Load(),
		quotaProdWire: s.quotaProduceWire.Load(), quotaFetchWire: s.quotaFetchWire.Load(), thr: s.throttl.Load(), cpu: cpu,
	}
}

// sample is one interval's measurements.
type sample struct {
	at                 time.Duration // since the load started, at the interval's end
	prodMBs, consMBs   float64       // record value MB/s
	prodRecs           float64       // records/s acknowledged
	quotaProdBps       float64       // Produce request bytes/s of the quota'd producers
	producerQuota      float64       // their quota during the interval
	quotaSteady        bool          // no quota change within or just before the interval
	quotaFetchBps      float64       // Fetch response bytes/s of the quota'd consumers
	throttlesPerSec    float64
	errs               int64 // produce and consume errors in the interval
	conns, goroutines  float64
	rssMiB, cpuCores   float64
	warm               bool // after the warm-up
	scrapeErr          error
	heapMiB, heapObjsK float64
	liveHeapMiB        float64 // reachable at the last GC: what the broker retains
}

// goroutinesPerConn is what each open connection costs the broker in
// goroutines: internal/wire serves each connection on one goroutine that
// reads, handles and answers (two, a read loop and a serve loop, before
// session 4). Goroutines beyond these are the broker's own, and those are
// what must stay flat: the connections themselves come and go with the
// clients (franz-go opens a connection for its 5-minute metadata refresh
// and reaps idle ones), which is load, not a leak.
const goroutinesPerConn = 1

func (sm sample) ownGoroutines() float64 { return sm.goroutines - goroutinesPerConn*sm.conns }

func (s *soak) record(prev, cur tallies) {
	secs := cur.at.Sub(prev.at).Seconds()
	changed := time.Unix(0, s.quotaChanged.Load())
	sm := sample{
		at:              cur.at.Sub(s.started),
		prodMBs:         float64(cur.prodBytes-prev.prodBytes) / secs / 1e6,
		consMBs:         float64(cur.consBytes-prev.consBytes) / secs / 1e6,
		prodRecs:        float64(cur.prodRecs-prev.prodRecs) / secs,
		quotaProdBps:    float64(cur.quotaProdWire-prev.quotaProdWire) / secs,
		producerQuota:   float64(s.producerQuota.Load()),
		quotaSteady:     changed.Before(prev.at.Add(-2 * time.Second)),
		quotaFetchBps:   float64(cur.quotaFetchWire-prev.quotaFetchWire) / secs,
		throttlesPerSec: float64(cur.thr-prev.thr) / secs,
		errs:            cur.prodErrs - prev.prodErrs + cur.consErrs - prev.consErrs,
		cpuCores:        (cur.cpu - prev.cpu) / secs,
		warm:            cur.at.Sub(s.started) > s.o.warmup,
	}
	m, err := scrape(s.b.MetricsAddr)
	sm.scrapeErr = err
	sm.conns, sm.goroutines = m["kbroker_open_connections"], m["go_goroutines"]
	sm.rssMiB = m["process_resident_memory_bytes"] / (1 << 20)
	sm.heapMiB, sm.heapObjsK = m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_heap_objects"]/1000
	sm.liveHeapMiB = m["go_gc_heap_live_bytes"] / (1 << 20)
	s.samples = append(s.samples, sm)
	progress("t=%v produce %.2f MB/s consume %.2f MB/s quota'd producers %.0f%% of quota, conns %.0f, goroutines %.0f, RSS %.1f MiB, heap %.1f MiB (live %.1f), broker CPU %.2f",
		sm.at.Round(time.Second), sm.prodMBs, sm.consMBs, 100*sm.quotaProdBps/sm.producerQuota, sm.conns, sm.goroutines, sm.rssMiB, sm.heapMiB, sm.liveHeapMiB, sm.cpuCores)
}

// scrape reads the broker's /metrics: unlabelled samples, and labelled
// ones summed over their labels, by name.
func scrape(addr string) (map[string]float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return map[string]float64{}, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[name] += v
			}
		}
	}
	return out, sc.Err()
}

// growth compares the mean of the first and last thirds of xs, and fits a
// line through them (per minute, samples every step).
type growth struct {
	first, last, min, max, slopePerMin float64
}

func measureGrowth(xs []float64, step time.Duration) growth {
	n := len(xs)
	third := max(n/3, 1)
	g := growth{first: mean(xs[:third]), last: mean(xs[n-third:]), min: slices.Min(xs), max: slices.Max(xs)}
	var sx, sy, sxx, sxy float64
	for i, y := range xs {
		x := float64(i) * step.Minutes()
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if d := float64(n)*sxx - sx*sx; d != 0 {
		g.slopePerMin = (float64(n)*sxy - sx*sy) / d
	}
	return g
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// report writes the Markdown report and returns the verdict.
func (s *soak) report(w io.Writer) bool {
	o := s.o
	fmt.Fprintf(w, "### Soak: %v, %d producers + %d consumers over SCRAM-SHA-512\n\n", o.duration, o.producers, o.consumers)
	fmt.Fprintf(w, "`go run ./bench/soak %s` on %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(w, "%d topics × %d partitions (%d MiB segments, log.retention.bytes %d MiB); each producer %d records/s of %d B (acks=all, idempotent); a quarter of the producers are user %s "+
		"(producer_byte_rate %d B/s, doubled and back every 4th change round), a quarter of the consumers user %s (consumer_byte_rate %d B/s); "+
		"prefixed ACLs; every %v: a topic config, the cluster default, an ACL and a SCRAM credential changed, %d producers and %d consumers replaced "+
		"by new clients, and an ACL-less user and a wrong password tried. Warm-up %v.\n\n",
		o.topics, o.partitions, segmentBytes>>20, retentionBytes>>20, o.rate, o.recordSize, prodQuota, o.producerQuota, consQuota, o.consumerQuota, o.changeEvery, o.churn, o.churn, o.warmup)
	fmt.Fprintf(w, "| t | produce MB/s | consume MB/s | quota'd producers ÷ quota | quota'd consumers ÷ quota | throttles/s | errors | connections | goroutines | goroutines − %d×conns | RSS MiB | heap MiB | live heap MiB | broker CPU |\n", goroutinesPerConn)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var prodRatios, consRatios []float64
	var mem growthSeries
	var prodBytes, prodAllowed float64 // over the steady windows, for the overall ratio
	for _, sm := range s.samples {
		mark := ""
		if !sm.warm {
			mark = " (warm-up)"
		}
		pr, cr := sm.quotaProdBps/sm.producerQuota, sm.quotaFetchBps/float64(o.consumerQuota)
		fmt.Fprintf(w, "| %v%s | %.2f | %.2f | %.2f | %.2f | %.1f | %d | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | %.2f |\n",
			sm.at.Round(time.Second), mark, sm.prodMBs, sm.consMBs, pr, cr, sm.throttlesPerSec, sm.errs, sm.conns, sm.goroutines, sm.ownGoroutines(),
			sm.rssMiB, sm.heapMiB, sm.liveHeapMiB, sm.cpuCores)
		if !sm.warm || sm.scrapeErr != nil {
			continue
		}
		mem.add(sm)
		consRatios = append(consRatios, cr)
		if sm.quotaSteady {
			prodRatios = append(prodRatios, pr)
			prodBytes, prodAllowed = prodBytes+sm.quotaProdBps, prodAllowed+sm.producerQuota
		}
	}
	overall := 0.0
	if prodAllowed > 0 {
		overall = prodBytes / prodAllowed
	}
	return s.verdict(w, prodRatios, overall, consRatios, mem)
}

// growthSeries holds the post-warm-up samples the flatness checks judge.
type growthSeries struct {
	rss, liveHeap, goroutines, ownGoroutines, conns []float64
}

func (g *growthSeries) add(sm sample) {
	g.rss = append(g.rss, sm.rssMiB)
	g.liveHeap = append(g.liveHeap, sm.liveHeapMiB)
	g.goroutines = append(g.goroutines, sm.goroutines)
	g.ownGoroutines = append(g.ownGoroutines, sm.ownGoroutines())
	g.conns = append(g.conns, sm.conns)
}

func (s *soak) verdict(w io.Writer, prodRatios []float64, prodOverall float64, consRatios []float64, mem growthSeries) bool {
	ok := true
	fail := func(format string, args ...any) {
		ok = false
		fmt.Fprintf(w, "- **FAIL** "+format+"\n", args...)
	}
	fmt.Fprintln(w)
	secs := s.o.duration.Seconds()
	fmt.Fprintf(w, "- Acknowledged %d records (%.2f MB/s), consumed %d (%.2f MB/s); %d produce and %d consume errors%s.\n",
		s.producedRecords.Load(), float64(s.producedBytes.Load())/secs/1e6, s.consumedRecords.Load(), float64(s.consumedBytes.Load())/secs/1e6,
		s.prodErrs.Load(), s.consErrs.Load(), lastErrs(s))
	if len(prodRatios) > 0 {
		fmt.Fprintf(w, "- Throttle accuracy, producers (Produce request bytes ÷ producer_byte_rate, %d steady windows): overall %.3f, per window median %.3f, range %.3f–%.3f.\n",
			len(prodRatios), prodOverall, median(prodRatios), slices.Min(prodRatios), slices.Max(prodRatios))
	}
	if len(consRatios) > 0 {
		fmt.Fprintf(w, "- Throttle accuracy, consumers (Fetch response bytes ÷ consumer_byte_rate, %d windows): overall %.3f, per window median %.3f, range %.3f–%.3f.\n",
			len(consRatios), mean(consRatios), median(consRatios), slices.Min(consRatios), slices.Max(consRatios))
	}
	fmt.Fprintf(w, "- Admin changes: %d, %d failed. Intrusion attempts: %d, %d let in, %d refused with an unexpected error.\n",
		s.changes.Load(), s.changeErrs.Load(), s.intrusions.Load(), s.breaches.Load(), s.oddRefusals.Load())
	if s.changeErrs.Load() > 0 {
		fail("%d admin changes failed", s.changeErrs.Load())
	}
	if s.breaches.Load() > 0 {
		fail("%d intrusion attempts succeeded", s.breaches.Load())
	}
	if len(mem.rss) >= 3 {
		s.judgeGrowth(w, mem, fail)
	} else {
		fail("too few samples after the warm-up to judge growth (%d)", len(mem.rss))
	}
	fmt.Fprintf(w, "- Broker goroutines before the clients: %.0f; %v after all clients closed: %.0f (open connections %.0f).\n",
		s.goroutinesBefore, s.settledIn.Round(100*time.Millisecond), s.goroutinesAfter, s.connsEnd)
	if s.goroutinesAfter > s.goroutinesBefore+10 || s.connsEnd > 0 {
		fail("the broker kept goroutines or connections after every client left")
	}
	if ok {
		fmt.Fprintln(w, "- Verdict: **flat** — no growth after warm-up, nobody let in, everything released.")
	}
	return ok
}

// judgeGrowth reports each series' growth after the warm-up and fails
// the run when what the broker retains grows: its RSS, its live heap, and
// its goroutines beyond those of the open connections. The raw goroutine
// count is reported beside the connection count it follows.
func (s *soak) judgeGrowth(w io.Writer, mem growthSeries, fail func(string, ...any)) {
	step := s.o.sample
	g := measureGrowth(mem.rss, step)
	fmt.Fprintf(w, "- RSS after warm-up: %.1f → %.1f MiB (means of first and last thirds), range %.1f–%.1f, slope %+.2f MiB/min.\n", g.first, g.last, g.min, g.max, g.slopePerMin)
	if g.last-g.first > max(0.10*g.first, 16) {
		fail("RSS grew after warm-up: %.1f → %.1f MiB", g.first, g.last)
	}
	g = measureGrowth(mem.liveHeap, step)
	fmt.Fprintf(w, "- Live heap (reachable at the last GC) after warm-up: %.1f → %.1f MiB, range %.1f–%.1f, slope %+.2f MiB/min.\n", g.first, g.last, g.min, g.max, g.slopePerMin)
	if g.last-g.first > max(0.10*g.first, 8) {
		fail("live heap grew after warm-up: %.1f → %.1f MiB", g.first, g.last)
	}
	c := measureGrowth(mem.conns, step)
	g = measureGrowth(mem.goroutines, step)
	fmt.Fprintf(w, "- Goroutines after warm-up: %.0f → %.0f, range %.0f–%.0f, following the open connections (%.0f → %.0f, range %.0f–%.0f).\n",
		g.first, g.last, g.min, g.max, c.first, c.last, c.min, c.max)
	g = measureGrowth(mem.ownGoroutines, step)
	fmt.Fprintf(w, "- Goroutines beyond the %d per open connection: %.0f → %.0f, range %.0f–%.0f, slope %+.2f/min.\n",
		goroutinesPerConn, g.first, g.last, g.min, g.max, g.slopePerMin)
	if g.last-g.first > max(0.05*g.first, 10) {
		fail("the broker's own goroutines grew after warm-up: %.0f → %.0f", g.first, g.last)
	}
}

func lastErrs(s *soak) string {
	var parts []string
	if e := errText(&s.lastProdErr); e != "" {
		parts = append(parts, "last produce error: "+e)
	}
	if e := errText(&s.lastConsErr); e != "" {
		parts = append(parts, "last consume error: "+e)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
