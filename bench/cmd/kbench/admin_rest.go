package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"kbroker/bench/admin"
	"kbroker/bench/broker"
	"kbroker/bench/stats"
	"kbroker/bench/workload"
)

// pct returns p50, p90, p99 and max of xs (nearest rank), without
// reordering xs.
func pct(xs []float64) (p50, p90, p99, mx float64) {
	c := slices.Clone(xs)
	v := stats.Percentiles(c, 0.5, 0.9, 0.99, 1)
	return v[0], v[1], v[2], v[3]
}

func pctRow(name string, xs []float64, format string) string {
	p50, p90, p99, mx := pct(xs)
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s |\n", name, len(xs),
		num(format, p50), num(format, p90), num(format, p99), num(format, mx))
}

const pctHeader = "| what | samples | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|\n"

// caseB6 is quota change propagation on bbolt.
func (s *adminSuite) caseB6(ctx context.Context, sec *section) error {
	sec.title = "B6 — quota change propagation (bbolt, single broker)"
	b, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer b.Stop()
	topic := topicName("b6")
	if err := admin.CreateTopic(ctx, b.Addr, topic); err != nil {
		return err
	}
	spec := admin.PropagationSpec{Addr: b.Addr, Topic: topic, ClientID: "p1", High: 2 * mib, Low: mib / 2,
		Cycles: s.o.ad.cycles, ProbeBytes: 600 << 10}
	wait := s.profile(ctx, b, "B6", min(20, s.o.ad.cycles/2))
	defer wait()
	res, err := admin.Propagation(ctx, spec)
	if err != nil {
		return err
	}
	sec.printf("`producer_byte_rate` on `client-id=p1` alternates 2 MiB/s → 0.5 MiB/s → 2 MiB/s (kadm AlterClientQuotas), %d times. "+
		"The producer is a live kgo connection (client-id p1) sending raw Produce requests of one 600 KiB record (acks=1); each cycle it "+
		"first waits until its 2 MiB/s bucket certainly holds one probe plus 0.2 s of quota, so only the new quota can throttle its next probe "+
		"(0.5 MiB/s allows at most 0.5 MiB of burst); after raising the quota again it sends one 1 KiB produce, so the producer is "+
		"running at the high quota when it is lowered. **Latency** = from AlterClientQuotas(0.5 MiB/s) returning to the first "+
		"produce response carrying throttle_time_ms > 0, the probe being sent right after the alter returns; it therefore includes one "+
		"600 KiB produce round trip, shown as **control** (the same produce on an unquota'd client-id just before the alter). "+
		"The alter rows are the AlterClientQuotas round trips (durable bbolt commit, then applied to the quota engine before the answer).\n\n", spec.Cycles)
	sec.printf(pctHeader)
	sec.printf("%s", pctRow("alter ack → first throttled produce response (ms)", res.Latency, "%.2f"))
	sec.printf("%s", pctRow("of which the throttled probe's own round trip (ms)", res.Probe, "%.2f"))
	sec.printf("%s", pctRow("control: 600 KiB produce round trip, no quota (ms)", res.Control, "%.2f"))
	sec.printf("%s", pctRow("throttle_time_ms carried by the first throttled response", res.ThrottleMs, "%.0f"))
	sec.printf("%s", pctRow("AlterClientQuotas 2 → 0.5 MiB/s (ms)", res.AlterLow, "%.2f"))
	sec.printf("%s", pctRow("AlterClientQuotas 0.5 → 2 MiB/s (ms)", res.AlterHigh, "%.2f"))
	sec.printf("\nThe first probe after the alter's answer was already throttled in %d of %d cycles; %d cycle(s) saw no throttle within three probes. "+
		"Smallest throttle that counted: %.0f ms.\n", res.FirstProbe, spec.Cycles, res.Missed, res.MinThrottleMs)
	_, _, p99, _ := pct(res.Latency)
	sec.printf("\nGoal p99 ≤ 100 ms: %.2f ms — %s", p99, verdict(p99 <= 100 && res.Missed == 0))
	if res.Missed > 0 {
		sec.printf(" (%d cycles missed)", res.Missed)
	}
	sec.printf(".\n")
	s.json["B6"] = res
	return nil
}

// caseB7 is the connection creation rate.
func (s *adminSuite) caseB7(ctx context.Context, sec *section) error {
	sec.title = "B7 — connection creation rate"
	const limit = 10.0
	dur := s.o.ad.connDur
	var rs []admin.ConnRateResult
	var parallel admin.ConnRateResult
	for run := range s.o.ad.runs + 1 {
		dialers := 1
		if run == s.o.ad.runs {
			dialers = 8
		}
		res, err := func() (admin.ConnRateResult, error) {
			b, err := s.start(ctx)
			if err != nil {
				return admin.ConnRateResult{}, err
			}
			defer b.Stop()
			if err := admin.SetQuotas(ctx, b.Addr, admin.Quota{EntityType: "ip", Name: "127.0.0.1", Key: "connection_creation_rate", Value: limit}); err != nil {
				return admin.ConnRateResult{}, err
			}
			// Let the bucket refill from the admin client's own connections.
			time.Sleep(time.Second)
			return admin.ConnectionRate(ctx, admin.ConnRateSpec{Addr: b.Addr, Limit: limit, Duration: dur, Dialers: dialers}), nil
		}()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  B7 %d dialer(s): %d answered, %d refused, %d failed → %.3f× (after 1 s %.3f×)\n",
			dialers, res.Accepted, res.Refused, res.Failed, res.Ratio, res.SteadyRatio)
		if dialers == 1 {
			rs = append(rs, res)
		} else {
			parallel = res
		}
	}
	sec.printf("`connection_creation_rate` = 10 on `ips/127.0.0.1` (AlterClientQuotas); then a loop dials, sends ApiVersions v0, waits for the "+
		"answer (or for the broker to close the connection unanswered after its throttle, KIP-612) and closes, for %s. Accepted = answered. "+
		"%d run(s) with one dial loop (as Kafka's DynamicConnectionQuotaTest), and one run with 8 concurrent loops; each on a fresh broker.\n\n", dur, s.o.ad.runs)
	sec.printf("| dial loops | accepted ÷ s ÷ limit | after the 1st second | accepted | refused | failed | accepted in 1st second |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	sec.printf("| 1 (median of %d) | %s | %s | %s | %s | %s | %s |\n", len(rs),
		num("%.3f", med(rs, func(r admin.ConnRateResult) float64 { return r.Ratio })),
		num("%.3f", med(rs, func(r admin.ConnRateResult) float64 { return r.SteadyRatio })),
		num("%.0f", med(rs, func(r admin.ConnRateResult) float64 { return float64(r.Accepted) })),
		num("%.0f", med(rs, func(r admin.ConnRateResult) float64 { return float64(r.Refused) })),
		num("%.0f", med(rs, func(r admin.ConnRateResult) float64 { return float64(r.Failed) })),
		num("%.0f", med(rs, func(r admin.ConnRateResult) float64 { return float64(r.FirstSecond) })))
	sec.printf("| 8 | %.3f | %.3f | %d | %d | %d | %d |\n", parallel.Ratio, parallel.SteadyRatio, parallel.Accepted, parallel.Refused, parallel.Failed, parallel.FirstSecond)
	ratio := med(rs, func(r admin.ConnRateResult) float64 { return r.Ratio })
	sec.printf("\nPer run (1 loop): %s.\n", list(rs, "%.3f", func(r admin.ConnRateResult) float64 { return r.Ratio }))
	sec.printf("\nGoal 0.95 ≤ accepted/s ÷ limit ≤ 1.05 (Kafka's own bound is ≤ 1.2): %.3f — %s; with 8 loops %.3f — %s.\n",
		ratio, verdict(ratio >= 0.95 && ratio <= 1.05), parallel.Ratio, verdict(parallel.Ratio >= 0.95 && parallel.Ratio <= 1.05))
	s.json["B7"] = map[string]any{"single": rs, "parallel": parallel}
	return nil
}

// caseB8 is the controller mutation rate.
func (s *adminSuite) caseB8(ctx context.Context, sec *section) error {
	sec.title = "B8 — controller mutation rate"
	const rate = 10.0
	dur := s.o.ad.mutDur
	var rs []admin.MutationResult
	for run := range s.o.ad.runs {
		res, err := func() (admin.MutationResult, error) {
			b, err := s.start(ctx)
			if err != nil {
				return admin.MutationResult{}, err
			}
			defer b.Stop()
			if err := admin.SetQuotas(ctx, b.Addr, admin.Quota{EntityType: "client-id", Name: "m1", Key: "controller_mutation_rate", Value: rate}); err != nil {
				return admin.MutationResult{}, err
			}
			wait := s.profile(ctx, b, fmt.Sprintf("B8-%d", run+1), int(dur/time.Second)-2)
			defer wait()
			return admin.MutationRate(ctx, admin.MutationSpec{Addr: b.Addr, ClientID: "m1", Rate: rate, Duration: dur})
		}()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  B8 run %d: burst %d in %s, then %.3f/s (%.3f×), refused %d, max throttle %.0f ms\n",
			run+1, res.Burst, fmtDur(res.BurstEnd), res.SteadyRate, res.SteadyRatio, res.Refused, res.MaxThrottleMs)
		rs = append(rs, res)
	}
	sec.printf("`controller_mutation_rate` = 10 on `client-id=m1`; a loop creates 1-partition topics, one per CreateTopics request "+
		"(v%d, so over-quota requests are refused with THROTTLING_QUOTA_EXCEEDED), with kgo waiting out every throttle, for %s; %d run(s), each on a fresh broker. "+
		"Burst = topics accepted up to the first throttled response; steady = accepted partitions/s from the first to the last acceptance after the burst.\n\n",
		rs[0].Version, dur, s.o.ad.runs)
	sec.printf("| burst (partitions) | burst took | steady partitions/s | steady ÷ 10 | accepted after burst ÷ (time after burst) ÷ 10 | refused | max throttle ms |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	sec.printf("| %s | %s ms | %s | %s | %s | %s | %s |\n",
		num("%.0f", med(rs, func(r admin.MutationResult) float64 { return float64(r.Burst) })),
		num("%.0f", med(rs, func(r admin.MutationResult) float64 { return ms(r.BurstEnd) })),
		num("%.3f", med(rs, func(r admin.MutationResult) float64 { return r.SteadyRate })),
		num("%.3f", med(rs, func(r admin.MutationResult) float64 { return r.SteadyRatio })),
		num("%.3f", med(rs, func(r admin.MutationResult) float64 { return r.AfterBurstRate / rate })),
		num("%.0f", med(rs, func(r admin.MutationResult) float64 { return float64(r.Refused) })),
		num("%.0f", med(rs, func(r admin.MutationResult) float64 { return r.MaxThrottleMs })))
	sec.printf("\nPer run: burst %s; steady ÷ 10 %s.\n", list(rs, "%.0f", func(r admin.MutationResult) float64 { return float64(r.Burst) }),
		list(rs, "%.3f", func(r admin.MutationResult) float64 { return r.SteadyRatio }))
	ratio := med(rs, func(r admin.MutationResult) float64 { return r.SteadyRatio })
	burst := med(rs, func(r admin.MutationResult) float64 { return float64(r.Burst) })
	sec.printf("\nGoal (anchors' B8): steady error ≤ 5 %%: %.2f %% — %s. Burst %.0f partitions = %.1f s of quota (Kafka's TokenBucket shape: "+
		"quota.window.num × window = 11 s, i.e. 110 + the crossing request).\n",
		abs(ratio-1)*100, verdict(abs(ratio-1) <= 0.05), burst, burst/rate)
	s.json["B8"] = rs
	return nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// coldStart starts kbroker on an existing directory and returns the time
// from exec to the first answered Metadata request (polled every 2 ms).
func (s *adminSuite) coldStart(ctx context.Context, dir string) (time.Duration, error) {
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: dir, NoWait: true})
	if err != nil {
		return 0, err
	}
	defer b.Stop()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ready, err := admin.WaitMetadata(wctx, b.Addr, 2*time.Millisecond, b.Exited())
	if err != nil {
		return 0, fmt.Errorf("cold start: %w\n%s", err, b.LogTail(1000))
	}
	return ready.Sub(b.Started), nil
}

func (s *adminSuite) coldStarts(ctx context.Context, dir string) ([]float64, error) {
	var out []float64
	for range s.o.ad.coldStarts {
		d, err := s.coldStart(ctx, dir)
		if err != nil {
			return out, err
		}
		out = append(out, ms(d))
	}
	return out, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// caseB9Quotas is the cost of many quota entities: produce throughput with
// them loaded, DescribeClientQuotas over all of them, and cold start.
func (s *adminSuite) caseB9Quotas(ctx context.Context, sec *section) error {
	sec.title = fmt.Sprintf("B9 — %d quota entities: produce throughput, DescribeClientQuotas, cold start", s.o.ad.entities)
	n := s.o.ad.entities
	tdir := filepath.Join(s.tmp, "b9q-template")
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: tdir, Metrics: s.o.ad.profileDir != ""})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			b.Stop()
		}
	}()
	t0 := time.Now()
	const batch = 1000
	if err := admin.LoadQuotaEntities(ctx, b.Addr, n, batch); err != nil {
		return err
	}
	load := time.Since(t0)
	if err := admin.SetQuotas(ctx, b.Addr, admin.Quota{EntityType: "client-id", Name: "bench-q", Key: "producer_byte_rate", Value: 1e12}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "  B9 loaded %d entities in %s\n", n, load.Round(time.Millisecond))
	wait := s.profile(ctx, b, "B9b-describe-quotas", 5)
	desc, err := admin.DescribeQuotasAll(ctx, b.Addr, s.o.ad.reps)
	wait()
	if err != nil {
		return err
	}
	b.Stop()
	stopped = true
	dbBytes := dirSize(filepath.Join(tdir, "data"))
	cold, err := s.coldStarts(ctx, tdir)
	if err != nil {
		return err
	}

	// (a) produce throughput, without and with the entities.
	type pairRes struct{ none, loaded, ratio float64 }
	var pairs []pairRes
	for pair := range s.o.ad.b9Pairs {
		var pr pairRes
		order := []bool{false, true}
		if pair%2 == 1 {
			order = []bool{true, false}
		}
		for _, loaded := range order {
			mbps, err := s.b9Produce(ctx, tdir, loaded, fmt.Sprintf("B9a-%v-%d", map[bool]string{true: "loaded", false: "none"}[loaded], pair+1))
			if err != nil {
				return err
			}
			if loaded {
				pr.loaded = mbps
			} else {
				pr.none = mbps
			}
		}
		pr.ratio = pr.loaded / pr.none
		fmt.Fprintf(os.Stderr, "  B9a pair %d: none %.1f MB/s, %d entities %.1f MB/s → %.3f\n", pair+1, pr.none, n, pr.loaded, pr.ratio)
		pairs = append(pairs, pr)
	}
	ratio := med(pairs, func(p pairRes) float64 { return p.ratio })
	sec.printf("A template broker is loaded with %d entities by AlterClientQuotas in requests of %d (a quarter users, half client-ids, a quarter "+
		"(user, client-id) pairs, each with producer_byte_rate and consumer_byte_rate) plus `clients/bench-q` producer_byte_rate = 10^12, "+
		"far above any rate here: %s (%.0f entities/s); the data directory is then %.1f MiB.\n\n",
		n, batch, load.Round(time.Millisecond), float64(n)/load.Seconds(), float64(dbBytes)/mib)
	sec.printf("**(a) Produce throughput** — B1 1 KiB (worker process, acks=1, 1 s warm-up, 5 s window, client-id bench-q) on a fresh broker "+
		"without any quota vs a fresh broker started on a copy of the template; %d pair(s), order alternating.\n\n", len(pairs))
	sec.printf("| pair | no quotas MB/s | %d entities MB/s | ratio |\n|---:|---:|---:|---:|\n", n)
	for i, p := range pairs {
		sec.printf("| %d | %.1f | %.1f | %.3f |\n", i+1, p.none, p.loaded, p.ratio)
	}
	sec.printf("| median | %.1f | %.1f | %.3f |\n", med(pairs, func(p pairRes) float64 { return p.none }),
		med(pairs, func(p pairRes) float64 { return p.loaded }), ratio)
	sec.printf("\nGoal ratio ≥ 0.97: %.3f — %s (single runs on this box drift ±30 %%; see the B1 self-check: ratios within ±0.1 of 1.0 are noise).\n\n",
		ratio, verdict(ratio >= 0.97))

	sec.printf("**(b) DescribeClientQuotas** v1 matching every entity (strict=false, no components), %d times on one connection:\n\n", len(desc.Ms))
	sec.printf(pctHeader)
	sec.printf("%s", pctRow(fmt.Sprintf("DescribeClientQuotas, %d entries, %.1f MiB response (ms)", desc.Items, float64(desc.ResponseBytes)/mib), desc.Ms, "%.1f"))
	_, _, p99, _ := pct(desc.Ms)
	p50, _, _, _ := pct(desc.Ms)
	sec.printf("\nResponse rate at p50: %.0f MB/s. Goal p99 < 100 ms: %.1f ms — %s.\n\n", float64(desc.ResponseBytes)/1e6/(p50/1e3), p99, verdict(p99 < 100))

	sec.printf("**Cold start** with the %d entities persisted (time from exec to the first answered Metadata request, polled every 2 ms; page cache warm):\n\n", n)
	sec.printf(pctHeader)
	sec.printf("%s", pctRow("cold start (ms)", cold, "%.0f"))
	cp50, _, _, _ := pct(cold)
	sec.printf("\nCold starts in order (ms): %s.\n", list(cold, "%.0f", func(x float64) float64 { return x }))
	sec.printf("\nGoal (anchors' B9c) < 1 s: p50 %.0f ms — %s.\n", cp50, verdict(cp50 < 1000))
	s.json["B9quotas"] = map[string]any{"entities": n, "load_ms": ms(load), "pairs": pairs, "describe": desc, "cold_ms": cold}
	return nil
}

// b9Produce runs B1 1 KiB against a fresh broker, loaded with the template
// entities or not, and returns MB/s acknowledged.
func (s *adminSuite) b9Produce(ctx context.Context, template string, loaded bool, name string) (float64, error) {
	opts := broker.StartOptions{Metrics: s.o.ad.profileDir != ""}
	if loaded {
		dir := filepath.Join(s.tmp, fmt.Sprintf("b9q-run-%d", time.Now().UnixNano()))
		if out, err := exec.CommandContext(ctx, "cp", "-a", template, dir).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("copy template: %v: %s", err, out)
		}
		defer os.RemoveAll(dir)
		opts.Dir = dir
	}
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, opts)
	if err != nil {
		return 0, err
	}
	defer b.Stop()
	topic := topicName("b9a")
	if err := broker.CreateTopic(ctx, b.Addr, topic); err != nil {
		return 0, err
	}
	spec := workload.Spec{Kind: workload.KindProduce, Addr: b.Addr, Topic: topic, ClientID: "bench-q", RecordBytes: 1024,
		Warmup: time.Second, Duration: 5 * time.Second}
	wait := s.profile(ctx, b, name, 6)
	defer wait()
	res, _, _, err := s.r.runLoad(ctx, spec, b)
	if err != nil {
		return 0, err
	}
	if res.Errors > 0 {
		return 0, fmt.Errorf("%d failed records: %s", res.Errors, res.FirstErr)
	}
	return float64(res.Bytes) / res.Seconds / 1e6, nil
}

// caseB9Configs is configs at scale: DescribeConfigs of many topics, one
// topic's alter, cold start.
func (s *adminSuite) caseB9Configs(ctx context.Context, sec *section) error {
	n := s.o.ad.topics
	sec.title = fmt.Sprintf("B9 / issue 3 — configs of %d topics: DescribeConfigs, AlterConfigs, cold start", n)
	tdir := filepath.Join(s.tmp, "b9c-template")
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: tdir, Metrics: s.o.ad.profileDir != ""})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			b.Stop()
		}
	}()
	t0 := time.Now()
	const batch = 250
	if err := admin.CreateTopicsWithConfigs(ctx, b.Addr, "cfg", n, batch); err != nil {
		return err
	}
	create := time.Since(t0)
	fmt.Fprintf(os.Stderr, "  B9 created %d topics in %s\n", n, create.Round(time.Millisecond))
	wait := s.profile(ctx, b, "B9c-describe-configs", 8)
	desc, err := admin.DescribeTopicConfigs(ctx, b.Addr, "cfg", n, s.o.ad.reps)
	wait()
	if err != nil {
		return err
	}
	inc, err := admin.AlterTopicConfig(ctx, b.Addr, "cfg-0000000", s.o.ad.alters, false)
	if err != nil {
		return err
	}
	leg, err := admin.AlterTopicConfig(ctx, b.Addr, "cfg-0000001", s.o.ad.alters/2, true)
	if err != nil {
		return err
	}
	b.Stop()
	stopped = true
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	coldN := n
	t1 := time.Now()
	cold, err := s.coldStarts(ctx, tdir)
	nofileNote := ""
	if err != nil && strings.Contains(err.Error(), "too many open files") {
		// The broker opens every partition's files at start; this box's
		// RLIMIT_NOFILE cannot be raised without CAP_SYS_RESOURCE. Time a
		// start with as many topics as fit instead.
		failedAfter := time.Since(t1)
		coldN = min(n/2, int(lim.Cur)/4)
		nofileNote = fmt.Sprintf("**Cold start with %d topics failed**: with this box's RLIMIT_NOFILE of %d (hard limit %d, not raisable "+
			"here) the broker exits %s after exec with `too many open files`: it opens every partition's files when it starts. "+
			"The cold-start row below is therefore for a second broker with %d topics created the same way.\n\n",
			n, lim.Cur, lim.Max, fmtDur(failedAfter), coldN)
		fmt.Fprintf(os.Stderr, "  B9 cold start hit RLIMIT_NOFILE %d; timing %d topics instead\n", lim.Cur, coldN)
		dir2 := filepath.Join(s.tmp, "b9c-small")
		b2, err2 := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: dir2})
		if err2 != nil {
			return err2
		}
		err2 = admin.CreateTopicsWithConfigs(ctx, b2.Addr, "cfg", coldN, batch)
		b2.Stop()
		if err2 != nil {
			return err2
		}
		cold, err = s.coldStarts(ctx, dir2)
	}
	if err != nil {
		return err
	}
	sec.printf("%s", nofileNote)
	sec.printf("A broker gets %d 1-partition topics, each created with three overrides (retention.ms, max.message.bytes, cleanup.policy) "+
		"by CreateTopics v4 in requests of %d: %s (%.0f topics/s).\n\n", n, batch, create.Round(time.Millisecond), float64(n)/create.Seconds())
	sec.printf(pctHeader)
	sec.printf("%s", pctRow(fmt.Sprintf("DescribeConfigs v4 of all configs of %d topics in one request: %d entries, %.1f MiB response (ms)",
		n, desc.Items, float64(desc.ResponseBytes)/mib), desc.Ms, "%.1f"))
	sec.printf("%s", pctRow("IncrementalAlterConfigs v1, SET retention.ms of one topic (ms)", inc.Ms, "%.2f"))
	sec.printf("%s", pctRow("AlterConfigs v2, the three overrides of one topic (ms)", leg.Ms, "%.2f"))
	sec.printf("%s", pctRow(fmt.Sprintf("cold start with %d topics and their overrides, exec → first Metadata answer (ms, page cache warm)", coldN), cold, "%.0f"))
	_, _, dp99, _ := pct(desc.Ms)
	dp50, _, _, _ := pct(desc.Ms)
	_, _, ip99, _ := pct(inc.Ms)
	_, _, lp99, _ := pct(leg.Ms)
	cp50, _, _, cmax := pct(cold)
	sec.printf("\nCold starts in order (ms): %s. DescribeConfigs samples (ms): %s.\n", list(cold, "%.0f", func(x float64) float64 { return x }),
		list(desc.Ms, "%.0f", func(x float64) float64 { return x }))
	sec.printf("\nDescribeConfigs response rate at p50: %.0f MB/s.\n\nGoals (issue 3):\n\n", float64(desc.ResponseBytes)/1e6/(dp50/1e3))
	sec.printf("- DescribeConfigs of %d topics p99 < 50 ms: %.1f ms — %s\n", n, dp99, verdict(dp99 < 50))
	sec.printf("- AlterConfigs of one topic p99 < 5 ms (durable commit): IncrementalAlterConfigs %.2f ms — %s; AlterConfigs %.2f ms — %s\n",
		ip99, verdict(ip99 < 5), lp99, verdict(lp99 < 5))
	if coldN == n {
		sec.printf("- cold start with %d topic overrides < 1 s: p50 %.0f ms, max %.0f ms — %s\n", n, cp50, cmax, verdict(cmax < 1000))
	} else {
		sec.printf("- cold start with %d topic overrides < 1 s: **not met** — the broker does not start at all under RLIMIT_NOFILE %d; "+
			"with %d topics p50 %.0f ms, max %.0f ms (%.0f ms if it scales linearly to %d)\n", n, lim.Cur, coldN, cp50, cmax, cp50*float64(n)/float64(coldN), n)
	}
	s.json["B9configs"] = map[string]any{"topics": n, "create_ms": ms(create), "describe": desc, "incremental": inc, "legacy": leg, "cold_ms": cold}
	return nil
}

// caseSCRAM measures SCRAM handshakes per second once the broker serves
// SASL; until then it reports that it was skipped.
func (s *adminSuite) caseSCRAM(ctx context.Context, sec *section) error {
	sec.title = "SCRAM handshakes per second"
	b, err := s.start(ctx)
	if err != nil {
		return err
	}
	defer b.Stop()
	vs, err := admin.APIVersions(ctx, b.Addr)
	if err != nil {
		return err
	}
	hs, ok1 := vs[17]
	au, ok2 := vs[36]
	if !ok1 {
		sec.printf("**Skipped**: the broker's ApiVersions does not list SaslHandshake (key 17)%s, so there is no SASL listener to measure yet. "+
			"When it does, this case needs a server.properties with a SASL_PLAINTEXT listener and a bootstrap SCRAM user (keys per README).\n",
			map[bool]string{true: fmt.Sprintf(" (SaslAuthenticate v%d is listed)", au), false: " nor SaslAuthenticate (key 36)"}[ok2])
		s.json["SCRAM"] = "skipped: SaslHandshake not advertised"
		return nil
	}
	b.Stop()
	const user, password = "bench", "bench-secret"
	sb, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{SASLPlaintext: true, Props: []string{
		"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
		"kbroker.scram.bootstrap.users=SCRAM-SHA-256=[name=" + user + ",password=" + password + "];SCRAM-SHA-512=[name=" + user + ",password=" + password + "]",
	}})
	if err != nil {
		return err
	}
	defer sb.Stop()
	sec.printf("The broker advertises SaslHandshake v%d. A broker with a PLAINTEXT and a SASL_PLAINTEXT listener "+
		"(`sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512`, `kbroker.scram.bootstrap.users` creating user `bench` with 4096 iterations); "+
		"loops that dial the SASL listener, send ApiVersions v0, SaslHandshake v1 and the two SaslAuthenticate v1 steps, verify the server "+
		"signature and close (client: xdg-go/scram, salted password cached across handshakes, so the broker side dominates). %s per row.\n\n", hs, 5*time.Second)
	sec.printf("| mechanism | loops | handshakes/s | p50 ms | p99 ms | failed |\n|---|---:|---:|---:|---:|---:|\n")
	var all []admin.ScramResult
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, loops := range []int{1, 4} {
			r := admin.ScramHandshakes(ctx, admin.ScramSpec{Addr: sb.SASLAddr, User: user, Password: password, Mechanism: mech,
				Duration: 5 * time.Second, Loops: loops})
			p50, _, p99, _ := pct(r.Ms)
			fmt.Fprintf(os.Stderr, "  SCRAM %s ×%d: %.0f/s, failed %d %s\n", mech, loops, r.PerSecond, r.Failed, r.FirstErr)
			sec.printf("| %s | %d | %.0f | %s | %s | %d |\n", mech, loops, r.PerSecond, num("%.2f", p50), num("%.2f", p99), r.Failed)
			if r.FirstErr != "" {
				sec.printf("\nFirst error (%s ×%d): `%s`\n\n", mech, loops, oneLine(r.FirstErr))
			}
			r.Ms = nil
			all = append(all, r)
		}
	}
	sec.printf("\nNo goal was set for this rate; for scale, B7's dial-ApiVersions-close loop without SASL is bounded only by its quota.\n")
	s.json["SCRAM"] = all
	return nil
}
