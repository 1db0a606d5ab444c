package interop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

const durableTopic = "durable"

// durablePartitions is the partition count of durableTopic; record seq of a
// round goes to partition seq % durablePartitions.
const durablePartitions = 3

// durableValue is record seq of round, padded to a typical small payload.
func durableValue(round, seq int) string {
	return fmt.Sprintf("round%d-seq%08d-%064x", round, seq, seq)
}

// produceUntilKilled streams records of round to the broker (a bounded
// number buffered), adds each acknowledged one to acked, and SIGKILLs the
// broker killAfter after the first acknowledgement. It returns how many
// records this round had acknowledged.
func produceUntilKilled(t *testing.T, p *testbin.Proc, round int, killAfter time.Duration, acked *testkit.AckedRecords) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(200),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		killed    bool
		earlyErr  error
		roundAcks int
		inflight  sync.WaitGroup
		loopDone  = make(chan struct{})
		firstAck  = make(chan struct{})
	)
	go func() {
		defer close(loopDone)
		for seq := 0; ctx.Err() == nil; seq++ {
			if seq%50 == 49 {
				time.Sleep(time.Millisecond) // keep each round's volume (and check) small
			}
			r := &kgo.Record{Topic: durableTopic, Partition: int32(seq % durablePartitions), Value: []byte(durableValue(round, seq))}
			inflight.Add(1)
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer inflight.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if !killed && earlyErr == nil {
						earlyErr = fmt.Errorf("record %s before the kill: %w", r.Value, err)
					}
					return
				}
				if roundAcks++; roundAcks == 1 {
					close(firstAck)
				}
				acked.Add(r.Partition, r.Offset, string(r.Value))
			})
		}
	}()

	// The random moment counts from the first acknowledgement, so that a
	// slow start cannot leave a round with nothing to check.
	select {
	case <-firstAck:
	case <-time.After(10 * time.Second):
		t.Fatalf("round %d: no record acknowledged within 10s", round)
	}
	time.Sleep(killAfter)
	mu.Lock()
	killed = true
	mu.Unlock()
	p.Kill9(t)

	// Nothing more can be acknowledged: fail whatever is still buffered.
	cancel()
	<-loopDone
	cl.Close()
	waitGroupTimeout(t, &inflight, 10*time.Second, "produce promises after the kill")
	mu.Lock()
	defer mu.Unlock()
	if earlyErr != nil {
		t.Fatalf("round %d: %v", round, earlyErr)
	}
	return roundAcks
}

// waitGroupTimeout waits for wg, failing the test after timeout.
func waitGroupTimeout(t *testing.T, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("%s: still waiting after %v", what, timeout)
	}
}

// checkDurable reads the whole topic and checks that every acknowledged
// record is at its offset with its value, that offsets have no gaps, and
// that each partition holds, per round, an unbroken prefix of what that
// round produced to it (no loss before an acknowledged record, no
// duplicate).
func checkDurable(t *testing.T, addr string, acked *testkit.AckedRecords, rounds int) {
	t.Helper()
	got := consumeAll(t, addr, durableTopic, 30*time.Second)
	stored := acked.Stored()
	for p := int32(0); p < durablePartitions; p++ {
		recs := got[p]
		perRound := map[int]int{} // round → records of it seen in p
		lastRound := 0
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d (gap or reorder)", p, i, r.Offset)
			}
			var round, seq int
			if _, err := fmt.Sscanf(string(r.Value), "round%d-seq%d-", &round, &seq); err != nil || round < 1 || round > rounds {
				t.Fatalf("partition %d offset %d: value %q was never produced", p, r.Offset, r.Value)
			}
			if round < lastRound {
				t.Fatalf("partition %d offset %d: round %d record after round %d", p, r.Offset, round, lastRound)
			}
			lastRound = round
			if want := int(p) + durablePartitions*perRound[round]; seq != want {
				t.Fatalf("partition %d offset %d: %q, want seq %d of round %d (lost or duplicated record)", p, r.Offset, r.Value, want, round)
			}
			perRound[round]++
		}
		var bad []string
		for off, v := range stored[p] {
			switch {
			case off >= int64(len(recs)):
				bad = append(bad, fmt.Sprintf("acknowledged %q at offset %d is gone (log ends at %d)", v, off, len(recs)))
			case string(recs[off].Value) != v:
				bad = append(bad, fmt.Sprintf("offset %d holds %q, acknowledged %q", off, recs[off].Value, v))
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			t.Errorf("partition %d: %d of %d acknowledged records lost, e.g.:\n%s", p, len(bad), len(stored[p]), strings.Join(bad[:min(len(bad), 5)], "\n"))
		}
	}
}

// A broker killed with SIGKILL at a random moment while a producer streams
// with acks=all loses no acknowledged record: after a restart on the same
// data every one is readable at its offset, round after round.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and crashes the kbroker binary")
	}
	b := newKbroker(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("random seed %d", seed)

	p := b.Start(t)
	// Small segments, so that kills land around segment rolls too and
	// recovery has many segments to open.
	resp, err := newAdmin(t, p.Addr).CreateTopic(testkit.Context(t, 10*time.Second), durablePartitions, 1,
		map[string]*string{"internal.segment.bytes": kadm.StringPtr("262144")}, durableTopic)
	if err != nil {
		t.Fatalf("create topic: %v (%s)", err, resp.ErrMessage)
	}
	var acked testkit.AckedRecords
	const rounds = 3
	for round := 1; round <= rounds; round++ {
		killAfter := time.Duration(300+rng.IntN(1200)) * time.Millisecond
		start := time.Now()
		n := produceUntilKilled(t, p, round, killAfter, &acked)
		p = b.Start(t)
		checkDurable(t, p.Addr, &acked, round)
		t.Logf("round %d: SIGKILL after %v, %d records acknowledged (%d in all), all found after restart; round took %v",
			round, killAfter, n, acked.Count(), time.Since(start).Round(time.Millisecond))
	}
	// The kills are meant to land among segment rolls: check there were some.
	segs, _ := filepath.Glob(filepath.Join(b.DataDir(), durableTopic+"-0", "*.log"))
	if len(segs) < 2 {
		t.Errorf("partition 0 has %d segment files; with segment.bytes=262144 it should have rolled", len(segs))
	}
}

// SIGTERM stops the broker promptly and cleanly (exit status 0) even with a
// consumer long-polling, and a restart serves every record and continues
// the offsets.
func TestSIGTERMStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kbroker binary")
	}
	const (
		topic = "sigterm"
		n     = 5000
	)
	b := newKbroker(t)
	p := b.Start(t)
	testkit.CreateTopic(t, newAdmin(t, p.Addr), topic, 2, nil)

	value := func(i int) *kgo.Record {
		return &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "sigterm-%05d", i)}
	}
	cl := testkit.Client(t, p.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1000))
	for i, off := range produceAsync(t, cl, topic, 0, n, value) {
		if off != int64(i/2) {
			t.Fatalf("record %d acknowledged at offset %d, want %d", i, off, i/2)
		}
	}
	cl.Close()

	// A consumer at the end, long-polling for 20s.
	consumer := testkit.Client(t, p.Addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd(), 1: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(20*time.Second))
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()
	go func() {
		for pollCtx.Err() == nil {
			consumer.PollFetches(pollCtx)
		}
	}()
	time.Sleep(500 * time.Millisecond) // let it reach the broker's long poll

	took := p.Stop(t, syscall.SIGTERM, 5*time.Second)
	stopPoll()
	if code := p.ExitCode(); code != 0 {
		t.Errorf("kbroker exited with status %d (%v) after SIGTERM, want 0", code, p.Err())
	}
	if took > 3*time.Second {
		t.Errorf("kbroker took %v to stop after SIGTERM with a consumer long-polling, want under 3s", took)
	}
	t.Logf("stopped %v after SIGTERM", took.Round(time.Millisecond))

	p = b.Start(t)
	got := consumeAll(t, p.Addr, topic, 20*time.Second)
	for part := int32(0); part < 2; part++ {
		if len(got[part]) != n/2 {
			t.Fatalf("after restart partition %d has %d records, want %d", part, len(got[part]), n/2)
		}
		for j, r := range got[part] {
			if want := value(2*j + int(part)); r.Offset != int64(j) || string(r.Value) != string(want.Value) {
				t.Fatalf("after restart partition %d offset %d: %q, want %q at offset %d", part, r.Offset, r.Value, want.Value, j)
			}
		}
	}
	cl = testkit.Client(t, p.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, off := range produceAsync(t, cl, topic, n, n+10, value) {
		if want := int64((n + i) / 2); off != want {
			t.Errorf("after restart record %d acknowledged at offset %d, want %d", n+i, off, want)
		}
	}
}
