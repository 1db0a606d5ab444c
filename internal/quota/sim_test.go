package quota

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// kafkaRate is Apache Kafka's byte-rate measurement, for comparison only:
// a Rate over a WindowedSum (clients/.../metrics/stats/Rate.java,
// SampledStat.java) and the throttle of QuotaUtils.throttleTime, on a
// millisecond clock like Kafka's.
type kafkaRate struct {
	samples  int
	windowMs int64
	quota    float64 // bytes/s
	s        []kafkaSample
	cur      int
}

type kafkaSample struct {
	start int64 // lastWindowMs
	value float64
}

func (r *kafkaRate) current(now int64) *kafkaSample {
	if len(r.s) == 0 {
		r.s = append(r.s, kafkaSample{start: now})
	}
	return &r.s[r.cur]
}

func (r *kafkaRate) record(v float64, now int64) {
	s := r.current(now)
	if now-s.start >= r.windowMs { // Sample.isComplete
		r.cur = (r.cur + 1) % r.samples
		if r.cur >= len(r.s) {
			r.s = append(r.s, kafkaSample{start: now})
		} else {
			r.s[r.cur] = kafkaSample{start: now}
		}
		s = &r.s[r.cur]
	}
	s.value += v
}

func (r *kafkaRate) purge(now int64) {
	for i := range r.s {
		if now-r.s[i].start >= int64(r.samples)*r.windowMs {
			r.s[i] = kafkaSample{start: now}
		}
	}
}

// windowSize is Rate.windowSize: elapsed since the oldest live sample, but
// at least samples−1 full windows.
func (r *kafkaRate) windowSize(now int64) int64 {
	r.purge(now)
	r.current(now)
	oldest := r.s[0].start
	for _, s := range r.s[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full := elapsed / r.windowMs; full < int64(r.samples-1) {
		elapsed += (int64(r.samples-1) - full) * r.windowMs
	}
	return max(elapsed, 1)
}

func (r *kafkaRate) measure(now int64) float64 {
	r.purge(now)
	sum := 0.0
	for _, s := range r.s {
		sum += s.value
	}
	return sum / (float64(r.windowSize(now)) / 1000)
}

// recordProduce is Sensor.record + checkQuotas + QuotaUtils.throttleTime:
// record first, then throttle = round((O − T)/T × W).
func (r *kafkaRate) recordProduce(bytes int, now int64) time.Duration {
	r.record(float64(bytes), now)
	o := r.measure(now)
	if o <= r.quota {
		return 0
	}
	ms := math.Round((o - r.quota) / r.quota * float64(r.windowSize(now)))
	return time.Duration(ms) * time.Millisecond
}

// TestKafkaRateMatchesKafkasUnitTest pins the comparison model to Kafka's
// ClientQuotaManagerTest.testQuotaViolation: quota 500 B/s, 400 B each
// second for 10 s, then 2300 B half a second later: a 10.5 s window,
// 6300 B / 10.5 s = 600 B/s and (600 − 500)/500 × 10.5 s = 2100 ms.
func TestKafkaRateMatchesKafkasUnitTest(t *testing.T) {
	r := &kafkaRate{samples: 11, windowMs: 1000, quota: 500}
	now := int64(0)
	for range 10 {
		if th := r.recordProduce(400, now); th != 0 {
			t.Fatalf("throttled at %d ms: %v", now, th)
		}
		now += 1000
	}
	now += 500
	if got := r.recordProduce(2300, now); got != 2100*time.Millisecond {
		t.Fatalf("throttle = %v, want 2.1s (window %d ms, rate %.1f)", got, r.windowSize(now), r.measure(now))
	}
}

// greedyResult is what a greedy producer saw.
type greedyResult struct {
	steadyErr   float64       // |bytes acked in [10 s, T) / (T − 10 s) − quota| / quota (B4 a)
	first10     float64       // bytes acked in [0, 10 s) ÷ quota, in seconds of quota (B4 b)
	preThrottle float64       // initial burst: bytes accepted before the first throttle ÷ quota
	maxThrottle time.Duration // largest throttle_time_ms
	avg         float64       // bytes/T ÷ quota
}

func (g greedyResult) String() string {
	return fmt.Sprintf("steady error %5.2f%%  initial burst %5.2f s of quota  first 10 s %6.2f s of quota  max throttle %6v  avg/quota %.3f",
		g.steadyErr*100, g.preThrottle, g.first10, g.maxThrottle, g.avg)
}

// simulateGreedy runs a producer that keeps one request of size bytes in
// flight, has a round trip of rtt, and waits each throttle_time_ms before
// sending again (kgo honours the throttle in full, KIP-219), for dur of
// fake time. record is the broker's measurement at the arrival time (ns).
func simulateGreedy(quota float64, size int, dur, rtt time.Duration, record func(now int64) time.Duration) greedyResult {
	type ack struct {
		at int64
		n  int
	}
	var acks []ack
	var res greedyResult
	for t := int64(0); t < int64(dur); {
		arrive := t + int64(rtt/2)
		th := record(arrive)
		at := arrive + int64(rtt/2)
		acks = append(acks, ack{at, size})
		if th > 0 && res.preThrottle == 0 {
			res.preThrottle = float64((len(acks)-1)*size) / quota
		}
		res.maxThrottle = max(res.maxThrottle, th)
		t = at + int64(th)
	}
	ten := int64(10 * time.Second)
	total, steady := 0, 0
	for _, a := range acks {
		if a.at < ten {
			res.first10 += float64(a.n) / quota
		}
		if a.at < int64(dur) {
			total += a.n
			if a.at >= ten {
				steady += a.n
			}
		}
	}
	rate := float64(steady) / (dur - 10*time.Second).Seconds()
	res.steadyErr = math.Abs(rate-quota) / quota
	res.avg = float64(total) / dur.Seconds() / quota
	return res
}

type simClock struct{ ns int64 }

func (c *simClock) now() time.Time { return time.Unix(0, 0).Add(time.Duration(c.ns)) }

// TestAccuracyGreedyProducer is benchmark B4 in simulation: quota 1 MiB/s on
// one client-id, 16 KiB and 1 MiB requests, 40 s, 0.2 ms round trip, both
// algorithms on the same traffic. Our goals (issue 4): steady error ≤ 2 %,
// initial burst ≤ 1 s of quota (plus the one request that crosses it, which
// KIP-219 always accepts), no throttle above one window plus one request.
func TestAccuracyGreedyProducer(t *testing.T) {
	const quota = 1 << 20
	for _, tc := range []struct {
		size int
		dur  time.Duration
	}{{16 << 10, 40 * time.Second}, {1 << 20, 40 * time.Second}, {16 << 10, 300 * time.Second}, {1 << 20, 300 * time.Second}} {
		clk := &simClock{}
		m := New(Options{Now: clk.now, ExpireEvery: -1})
		m.SetOverrides(Overrides{"clients/q1": {ProducerByteRate: quota}})
		ours := simulateGreedy(quota, tc.size, tc.dur, 200*time.Microsecond, func(now int64) time.Duration {
			clk.ns = now
			return m.RecordProduce("ANONYMOUS", "q1", tc.size)
		})
		kr := &kafkaRate{samples: 11, windowMs: 1000, quota: quota}
		kafka := simulateGreedy(quota, tc.size, tc.dur, 200*time.Microsecond, func(now int64) time.Duration {
			return kr.recordProduce(tc.size, now/1e6)
		})
		name := fmt.Sprintf("%dKiB/%v", tc.size>>10, tc.dur)
		t.Logf("%-12s kbroker: %v", name, ours)
		t.Logf("%-12s kafka:   %v", name, kafka)

		req := float64(tc.size) / quota // one request, in seconds of quota
		if ours.steadyErr > 0.02 {
			t.Errorf("%s: steady error %.2f%% > 2%%", name, ours.steadyErr*100)
		}
		if over := ours.first10 - 10; over > 1+req+1e-9 {
			t.Errorf("%s: %.3f s of quota above the rate in the first 10 s, > 1 s + one request", name, over)
		}
		if limit := time.Second + time.Duration(req*float64(time.Second)) + time.Millisecond; ours.maxThrottle > limit {
			t.Errorf("%s: max throttle %v > %v", name, ours.maxThrottle, limit)
		}
		if ours.preThrottle > 1.05+req {
			t.Errorf("%s: %.2f s of quota accepted before the first throttle", name, ours.preThrottle)
		}
		// The comparison model must show what the issue says about Kafka,
		// or the comparison itself is wrong.
		if tc.dur == 40*time.Second && kafka.preThrottle < 9 {
			t.Errorf("%s: kafka model throttled after %.2f s of quota; expected ≈10", name, kafka.preThrottle)
		}
	}
}

// TestAccuracyGreedyConsumer is B5 in simulation: a consumer that fetches as
// much as FetchByteCap allows, honours throttles (empty responses) and gets
// 1 MiB/s; and the KAFKA-9677 starvation case, 250 B/s with 1 KiB batches
// bigger than the cap.
func TestAccuracyGreedyConsumer(t *testing.T) {
	for _, tc := range []struct {
		quota float64
		batch int // smallest unit the broker can return (one record batch)
		want  int // bytes the consumer asks for
	}{{1 << 20, 16 << 10, 50 << 20}, {250, 1024, 4096}} {
		clk := &simClock{}
		m := New(Options{Now: clk.now, ExpireEvery: -1})
		m.SetOverrides(Overrides{"clients/c1": {ConsumerByteRate: tc.quota}})
		const dur = 40 * time.Second
		var got, steady int
		var first, last int64 = -1, -1
		var maxResp int
		for now := int64(0); now < int64(dur); {
			clk.ns = now
			size := min(int64(tc.want), m.FetchByteCap("u", "c1"))
			size = max(size/int64(tc.batch), 1) * int64(tc.batch) // whole batches, at least one
			th := m.RecordFetch("u", "c1", int(size))
			if th > 0 {
				m.UnrecordFetch("u", "c1", int(size))
				now += int64(th) + int64(200*time.Microsecond)
				continue
			}
			got += int(size)
			maxResp = max(maxResp, int(size))
			if now >= int64(10*time.Second) {
				if first < 0 {
					first = now
				} else {
					steady += int(size)
					last = now
				}
			}
			now += int64(200 * time.Microsecond)
		}
		rate := float64(steady) / (float64(last-first) / 1e9)
		errPct := math.Abs(rate-tc.quota) / tc.quota * 100
		t.Logf("consumer quota %.0f B/s, batch %d: steady error %.2f%%, total %d B in %v, largest response %d B",
			tc.quota, tc.batch, errPct, got, dur, maxResp)
		if got == 0 {
			t.Fatalf("consumer starved")
		}
		if tc.batch <= int(tc.quota) && errPct > 2 {
			t.Errorf("steady error %.2f%% > 2%%", errPct)
		}
		if tc.batch > int(tc.quota) { // only whole oversized batches: still ≈ quota on average
			if avg := float64(got) / dur.Seconds(); avg > tc.quota*1.05+float64(tc.batch)/dur.Seconds() {
				t.Errorf("oversized batches: average %.1f B/s over quota %.0f", avg, tc.quota)
			}
		}
	}
}

// TestAccuracyConnectionRate is B7 in simulation: connection_creation_rate
// 10 on one ip; a client dials every 5 ms for 13 s; a refused connection is
// held open for the throttle before it is closed (KIP-612), which the
// client waits out. Accepted per second must be within [0.95, 1.05] × limit.
func TestAccuracyConnectionRate(t *testing.T) {
	clk := &simClock{}
	m := New(Options{Now: clk.now, ExpireEvery: -1})
	m.SetOverrides(Overrides{"ips/127.0.0.1": {ConnectionCreationRate: 10}})
	accepted := 0
	for now := int64(0); now < int64(13*time.Second); {
		clk.ns = now
		th := m.RecordConnection("127.0.0.1")
		if th == 0 {
			accepted++
		}
		now += int64(th) + int64(5*time.Millisecond)
	}
	ratio := float64(accepted) / 13 / 10
	t.Logf("connection rate: %d accepted in 13 s at limit 10/s = %.3f× the limit", accepted, ratio)
	if ratio > 1.05 || ratio < 0.95 {
		t.Errorf("accepted %.3f× the limit", ratio)
	}
}

// TestAccuracyControllerMutations is B8 in simulation: 10 partitions/s, a
// strict-mode loop creating 1-partition topics for 30 s, waiting out every
// throttle. Kafka's bucket admits a burst of samples × window × quota.
func TestAccuracyControllerMutations(t *testing.T) {
	clk := &simClock{}
	m := New(Options{Now: clk.now, ExpireEvery: -1})
	m.SetOverrides(Overrides{"users/<default>": {ControllerMutationRate: 10}})
	accepted, burst := 0, -1
	var burstEnd, lastAt int64
	for now := int64(0); now < int64(30*time.Second); {
		clk.ns = now
		th, ok := m.CheckMutations("admin", "cli")
		if ok {
			th = m.RecordMutations("admin", "cli", 1)
			accepted++
			lastAt = now
		}
		if th > 0 && burst < 0 {
			burst, burstEnd = accepted, now
		}
		now += int64(th) + int64(time.Millisecond)
	}
	rate := float64(accepted-burst) / (float64(lastAt-burstEnd) / 1e9)
	t.Logf("controller mutations: burst %d partitions, then %.3f/s against 10/s (%.2f%% error)", burst, rate, math.Abs(rate-10)*10)
	if burst < 100 || burst > 112 {
		t.Errorf("burst %d, want ≈ 11 s × 10 (Kafka's shape)", burst)
	}
	if math.Abs(rate-10)/10 > 0.05 {
		t.Errorf("steady rate %.3f/s, want 10 ± 5%%", rate)
	}
}
