// Package txncheck is a fault-injection checker of kbroker's transactions,
// in the spirit of Jepsen's Kafka workload: transactional franz-go
// producers (each its own transactional id) write to several partitions of
// the real `kbroker serve` binary (bbolt metadata), committing, aborting
// and abandoning transactions at random, while the broker is killed with
// SIGKILL at random points — while records are produced, right after an
// EndTxn(commit) was sent (before and during PrepareCommit), right after
// a commit was answered (while the markers are written), or at any instant
// — and restarted. After every restart the last stable offset must
// pass everything written before the kill; at the end a read_committed
// consumer must see every committed transaction whole, nothing of an
// aborted one, nothing twice, and each producer's records in order per
// partition.
//
// Where each kill landed is read from the killed run's files before the
// restart: for every commit in flight (or just answered), whether its
// partitions hold its markers — none, some, all — and the last state
// `__transaction_state` holds for its transactional id (which may already
// be the next transaction's Ongoing). The binary has no hook to stop at a
// chosen point, so the points are reached by timing and counted.
//
// It is sized for CI by default (6 kills, about 30–45 s), run by
// scripts/test's `go test ./...`. The long run for BENCHMARKS.md sets the
// environment (30 kills: about 2.5 minutes on 2 cores):
//
//	TXNCHECK_KILLS=30 TXNCHECK_PRODUCERS=6 TXNCHECK_PARTITIONS=6 go test -count=1 -timeout 30m -run TestTxnCheck -v ./test/txncheck
//
// TXNCHECK_SEED replays a run's random choices (the seed is logged); the
// broker's timing is not replayed.
package txncheck

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/testbin"
	"kbroker/test/tcprelay"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

const topic = "txncheck"

// Outcomes of a transaction as its producer knows them.
const (
	stOpen          = iota // records produced, no EndTxn yet
	stNotCommitted         // aborted, abandoned, or failed before EndTxn(commit): must never be read
	stCommitUnknown        // EndTxn(commit) sent, no success seen: all or nothing
	stCommitted            // EndTxn(commit) succeeded: must be read whole
)

// txnRecord is one transaction: its records by partition, in produce order.
type txnRecord struct {
	txnID  string
	seq    int
	values map[int32][]string
	status int
}

// history is every transaction of a run.
type history struct {
	mu   sync.Mutex
	txns map[string]*txnRecord // by txnID/seq
	// inEndTxn are the transactions whose EndTxn(commit) is in flight, by
	// txnID: what a kill right now interrupts.
	inEndTxn map[string]*txnRecord
	// commitLatency are recent successful EndTxn(commit) round trips: the
	// window a kill "just after EndTxn" is spread over.
	commitLatency []time.Duration
}

// killDelay is a random instant within the last commits' typical round
// trip (1.5 × their median), leaning early, so that kills land before, during and after
// the coordinator's PrepareCommit write and its markers.
func (h *history) killDelay(rng *rand.Rand) time.Duration {
	h.mu.Lock()
	lat := slices.Clone(h.commitLatency)
	h.mu.Unlock()
	if len(lat) == 0 {
		return time.Duration(rng.Intn(3000)) * time.Microsecond
	}
	slices.Sort(lat)
	window := float64(lat[len(lat)/2]) * 1.5
	// Squared, the spread leans towards the start: the coordinator's part
	// (PrepareCommit, the markers) is the early, short end of the round trip.
	u := rng.Float64()
	return time.Duration(window * u * u)
}

func (h *history) set(tx *txnRecord, status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tx.status = status
	if status == stCommitUnknown {
		h.inEndTxn[tx.txnID] = tx
	} else {
		delete(h.inEndTxn, tx.txnID)
	}
}

type settings struct {
	kills, producers, partitions int
	seed                         int64
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func TestTxnCheck(t *testing.T) {
	s := settings{
		kills:      envInt(t, "TXNCHECK_KILLS", 6),
		producers:  envInt(t, "TXNCHECK_PRODUCERS", 4),
		partitions: envInt(t, "TXNCHECK_PARTITIONS", 4),
		seed:       time.Now().UnixNano(),
	}
	if v := os.Getenv("TXNCHECK_SEED"); v != "" {
		var err error
		if s.seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("TXNCHECK_SEED=%q: %v", v, err)
		}
	}
	t.Logf("kills %d, producers %d, partitions %d, seed %d", s.kills, s.producers, s.partitions, s.seed)
	rng := rand.New(rand.NewSource(s.seed))
	started := time.Now()

	px := tcprelay.New(t)
	b := testbin.NewBroker(t, map[string]string{
		"advertised.listeners":                                        "PLAINTEXT://" + px.Addr(),
		"transaction.state.log.num.partitions":                        "3",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
	})
	proc := b.Start(t)
	px.Point(proc.Addr)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(px.Addr()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, int32(s.partitions), 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	h := &history{txns: map[string]*txnRecord{}, inEndTxn: map[string]*txnRecord{}}
	signals := make(chan event, 64) // as producers reach the points a kill aims at
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range s.producers {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			runProducer(ctx, t, i, px.Addr(), s.partitions, rand.New(rand.NewSource(seed)), h, signals, stop)
		}(rng.Int63())
	}

	modes := map[string]int{}
	points := map[string]int{}
	for k := range s.kills {
		time.Sleep(time.Duration(200+rng.Intn(1000)) * time.Millisecond)
		mode := []string{"any instant", "while producing", "just after EndTxn(commit) was sent", "just after a commit was answered"}[rng.Intn(4)]
		want := map[string]string{"while producing": evProduce, "just after EndTxn(commit) was sent": evEndTxn,
			"just after a commit was answered": evCommitted}[mode]
		var answered *txnRecord
		if want != "" {
			drain(signals)
			wait := time.After(3 * time.Second)
		waiting:
			for {
				select {
				case ev := <-signals:
					if ev.kind == want {
						answered = ev.tx
						break waiting
					}
				case <-wait:
					mode += " (timed out waiting: any instant)"
					break waiting
				}
			}
			switch want {
			case evEndTxn:
				time.Sleep(h.killDelay(rng))
			case evCommitted:
				// The coordinator answers once PrepareCommit is written and
				// writes the markers after: a kill now lands among them.
				u := rng.Float64()
				time.Sleep(time.Duration(u * u * float64(500*time.Microsecond)))
			default:
				time.Sleep(time.Duration(rng.Intn(1000)) * time.Microsecond)
			}
		}
		h.mu.Lock()
		inFlight := make([]*txnRecord, 0, len(h.inEndTxn)+1)
		for _, tx := range h.inEndTxn {
			inFlight = append(inFlight, tx)
		}
		if want == evCommitted && answered != nil {
			inFlight = append(inFlight, answered)
		}
		h.mu.Unlock()
		px.Point("")
		proc.Kill9(t)
		modes[mode]++

		// Where the kill landed for the commits in flight, from the files
		// (a commit that completed between the snapshot and the kill shows
		// as "all markers written").
		states, err := lastTxnStates(b.DataDir())
		if err != nil {
			t.Logf("reading __transaction_state: %v", err)
		}
		var here []string
		for _, tx := range inFlight {
			phase, state := killPoint(b.DataDir(), topic, tx, states)
			points[phase+", the id's last persisted state "+state]++
			here = append(here, phase+"/"+state)
		}

		hw := endOffsetsFromDisk(t, b.DataDir(), s.partitions)
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		down := time.Now()
		proc = b.Start(t)
		px.Point(proc.Addr)
		restarted := time.Now()
		waitLSOPasses(t, ctx, adm, hw, k)
		t.Logf("kill %d %s; commits in flight: %v; restart %s, LSO past the old end %s later",
			k+1, mode, here, restarted.Sub(down).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
	}
	close(stop)
	wg.Wait()

	// Every transaction ends: the abandoned ones by the broker's timeout.
	waitLSOAtEnd(t, ctx, adm, s.partitions)
	seen := readCommitted(t, ctx, px.Addr(), h)
	if anomalies := verify(h, seen); len(anomalies) > 0 {
		t.Fatalf("%d anomalies (first 30):\n%s", len(anomalies), strings.Join(anomalies, "\n"))
	}

	var ml, pl []string
	for m, n := range modes {
		ml = append(ml, fmt.Sprintf("%s: %d", m, n))
	}
	for p, n := range points {
		pl = append(pl, fmt.Sprintf("%s: %d", p, n))
	}
	sort.Strings(ml)
	sort.Strings(pl)
	counts := map[int]int{}
	for _, tx := range h.txns {
		counts[tx.status]++
	}
	t.Logf("%d kills in %s: %s", s.kills, time.Since(started).Round(time.Second), strings.Join(ml, "; "))
	t.Logf("commits in flight at the kills: %s", strings.Join(pl, "; "))
	read := 0
	for _, vs := range seen {
		read += len(vs)
	}
	t.Logf("transactions: %d committed, %d commit outcome unknown, %d not committed (aborted, abandoned or failed); %d records read, 0 anomalies", counts[stCommitted], counts[stCommitUnknown], counts[stNotCommitted]+counts[stOpen], read)
}

// Points of a producer's transaction that kills aim at.
const (
	evProduce   = "produce"   // records are about to be produced
	evEndTxn    = "endtxn"    // EndTxn(commit) is about to be sent
	evCommitted = "committed" // EndTxn(commit) was just answered
)

type event struct {
	kind string
	tx   *txnRecord
}

func drain(c chan event) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func signal(c chan event, kind string, tx *txnRecord) {
	select {
	case c <- event{kind, tx}:
	default:
	}
}

// runProducer is producer slot i: transactions of 1–8 records to random
// partitions, about a quarter aborted, one in a hundred abandoned (the client is
// closed with the transaction open and the slot goes on under a new
// transactional id, so only the broker's transaction timeout can end it).
// Any error ends the client; a new one under the same id fences the old
// epoch and so aborts whatever the old one left open.
func runProducer(ctx context.Context, t *testing.T, slot int, addr string, partitions int, rng *rand.Rand, h *history, signals chan event, stop chan struct{}) {
	gen := 0
	txnID := func() string { return fmt.Sprintf("txncheck-%d-%d", slot, gen) }
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(addr),
			kgo.TransactionalID(txnID()),
			kgo.TransactionTimeout(3*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0),
			kgo.RetryTimeout(4*time.Second),
			kgo.RecordDeliveryTimeout(6*time.Second),
		)
		if err != nil {
			t.Errorf("producer %d: %v", slot, err)
			return nil
		}
		return cl
	}
	cl := newClient()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	restart := func(newID bool) {
		cl.Close()
		if newID {
			gen++
		}
		time.Sleep(50 * time.Millisecond)
		cl = newClient()
	}
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		if cl == nil {
			return
		}
		tx := &txnRecord{txnID: txnID(), seq: seq, values: map[int32][]string{}}
		h.mu.Lock()
		h.txns[fmt.Sprintf("%s/%d", tx.txnID, seq)] = tx
		h.mu.Unlock()
		if err := cl.BeginTransaction(); err != nil {
			h.set(tx, stNotCommitted)
			restart(false)
			continue
		}
		var recs []*kgo.Record
		for j := range 1 + rng.Intn(8) {
			part := int32(rng.Intn(partitions))
			v := fmt.Sprintf("%s/%d/%d", tx.txnID, seq, j)
			tx.values[part] = append(tx.values[part], v)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)})
		}
		signal(signals, evProduce, tx)
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			h.set(tx, stNotCommitted)
			restart(false)
			continue
		}
		switch r := rng.Intn(20); {
		case r == 0 && rng.Intn(5) == 0: // abandon, one in a hundred
			h.set(tx, stNotCommitted)
			restart(true)
		case r < 6: // abort
			h.set(tx, stNotCommitted)
			if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
				restart(false)
			}
		default:
			h.set(tx, stCommitUnknown)
			signal(signals, evEndTxn, tx)
			sent := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				// The outcome is the coordinator's now: whatever it
				// persisted (PrepareCommit or not) decides.
				h.mu.Lock()
				delete(h.inEndTxn, tx.txnID)
				h.mu.Unlock()
				restart(false)
				continue
			}
			h.set(tx, stCommitted)
			signal(signals, evCommitted, tx)
			h.mu.Lock()
			h.commitLatency = append(h.commitLatency, time.Since(sent))
			if len(h.commitLatency) > 200 {
				h.commitLatency = h.commitLatency[1:]
			}
			h.mu.Unlock()
		}
		// A short random pause keeps the load to what a shared CI machine
		// affords; the kills need transactions in flight, not throughput.
		time.Sleep(time.Duration(rng.Intn(5000)) * time.Microsecond)
	}
}

// endOffsetsFromDisk is each partition's log end offset as the killed run
// left it: the offset after its last whole batch.
func endOffsetsFromDisk(t *testing.T, dataDir string, partitions int) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := range partitions {
		batches, err := readPartition(fmt.Sprintf("%s/%s-%d", dataDir, topic, p))
		if err != nil {
			t.Fatalf("reading partition %d: %v", p, err)
		}
		if len(batches) > 0 {
			last := batches[len(batches)-1]
			n := int64(len(last.values))
			if last.control {
				n = 1
			}
			out[int32(p)] = last.offset + n
		}
	}
	return out
}

// waitLSOPasses: after a restart, every transaction open at the kill ends
// (its producer commits or aborts it, a new epoch fences it, or the
// broker's timeout aborts it), so the last stable offset of each partition
// reaches the end the killed run left within the transaction timeout and
// some slack — while new transactions, all above that end, run on.
func waitLSOPasses(t *testing.T, ctx context.Context, adm *kadm.Client, end map[int32]int64, kill int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		behind := ""
		if err == nil {
			for p, e := range end {
				o, ok := lso.Lookup(topic, p)
				if !ok || o.Err != nil || o.Offset < e {
					behind = fmt.Sprintf("partition %d: LSO %d (%v), end before the kill %d", p, o.Offset, o.Err, e)
					break
				}
			}
		} else {
			behind = err.Error()
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill %d: the LSO did not move past what the killed run wrote: %s", kill+1, behind)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLSOAtEnd: with the producers stopped, every partition's LSO reaches
// its high watermark: no transaction is left open.
func waitLSOAtEnd(t *testing.T, ctx context.Context, adm *kadm.Client, partitions int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lso, err1 := adm.ListCommittedOffsets(ctx, topic)
		hw, err2 := adm.ListEndOffsets(ctx, topic)
		behind := ""
		if err1 != nil || err2 != nil {
			behind = fmt.Sprintf("%v %v", err1, err2)
		} else {
			for p := range int32(partitions) {
				l, _ := lso.Lookup(topic, p)
				e, _ := hw.Lookup(topic, p)
				if l.Err != nil || e.Err != nil || l.Offset != e.Offset {
					behind = fmt.Sprintf("partition %d: LSO %d (%v), high watermark %d (%v)", p, l.Offset, l.Err, e.Offset, e.Err)
					break
				}
			}
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a transaction stayed open after the producers stopped: %s", behind)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readCommitted reads every partition from the start with read_committed
// until the committed records have all arrived and then 2 s pass with
// nothing new: the values per partition in offset order.
func readCommitted(t *testing.T, ctx context.Context, addr string, h *history) map[int32][]string {
	t.Helper()
	want := 0
	h.mu.Lock()
	for _, tx := range h.txns {
		if tx.status == stCommitted {
			for _, vs := range tx.values {
				want += len(vs)
			}
		}
	}
	h.mu.Unlock()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[int32][]string{}
	n, quietSince := 0, time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			seen[r.Partition] = append(seen[r.Partition], string(r.Value))
			got++
		})
		n += got
		if got > 0 {
			quietSince = time.Now()
		}
		if n >= want && time.Since(quietSince) > 2*time.Second {
			break
		}
	}
	return seen
}

// verify holds what read_committed saw to the history and returns the
// anomalies, up to 30, so that one run shows their shape.
func verify(h *history, seen map[int32][]string) (anomalies []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	add := func(format string, args ...any) {
		if len(anomalies) < 30 {
			anomalies = append(anomalies, fmt.Sprintf(format, args...))
		}
	}
	type pos struct {
		tx  *txnRecord
		idx int
	}
	byValue := map[string]pos{}
	for _, tx := range h.txns {
		for _, vs := range tx.values {
			for i, v := range vs {
				byValue[v] = pos{tx, i}
			}
		}
	}
	count := map[string]int{}
	seenOf := map[*txnRecord]int{}
	for part, vs := range seen {
		last := map[string][2]int{} // txnID -> (seq, index) last read on this partition
		for _, v := range vs {
			count[v]++
			if count[v] == 2 {
				add("partition %d: %s read twice", part, v)
			}
			p, ok := byValue[v]
			if !ok {
				add("partition %d: %s was never produced", part, v)
				continue
			}
			if count[v] == 1 {
				seenOf[p.tx]++
			}
			if p.tx.status == stNotCommitted || p.tx.status == stOpen {
				add("partition %d: %s of a transaction that was never committed", part, v)
			}
			cur := [2]int{p.tx.seq, p.idx}
			if prev, ok := last[p.tx.txnID]; ok && (cur[0] < prev[0] || cur[0] == prev[0] && cur[1] <= prev[1]) {
				add("partition %d: %s read after %s/%d/…#%d: out of order", part, v, p.tx.txnID, prev[0], prev[1])
			}
			last[p.tx.txnID] = cur
		}
	}
	for _, tx := range h.txns {
		total := 0
		for _, vs := range tx.values {
			total += len(vs)
		}
		got := seenOf[tx]
		switch {
		case tx.status == stCommitted && got != total:
			add("committed transaction %s/%d: %d of its %d records read", tx.txnID, tx.seq, got, total)
		case tx.status == stCommitUnknown && got != 0 && got != total:
			add("transaction %s/%d (commit outcome unknown): %d of its %d records read, not all or none", tx.txnID, tx.seq, got, total)
		}
	}
	return anomalies
}
