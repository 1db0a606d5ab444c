package crash

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
)

// txnRun is one transaction as its producer and (playing the coordinator)
// its marker writer saw it.
type txnRun struct {
	pid    int64
	values []string // every record, over both partitions
	// decided is set once every produce was acknowledged and the outcome
	// chosen, before the first marker is sent: a coordinator's Prepare*
	// state, which it completes after a restart.
	decided, commit bool
	first           map[int32]int64 // partition -> offset of its acknowledged batch
	marked          map[int32]bool  // partitions whose marker was acknowledged
}

type txnLedger struct {
	mu   sync.Mutex
	runs []*txnRun
}

func (l *txnLedger) add(r *txnRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *txnLedger) update(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn()
}

const txnPartitions = 2

// A transaction's data and markers survive kill -9 at any point of it:
// several transactional producers write to both partitions of a topic,
// committing or aborting at random, until the broker is killed; after the
// restart the test completes what a coordinator would (the decided
// transactions get their markers again, the undecided ones are aborted)
// and a read_committed kgo consumer must see every committed transaction
// whole, no record of an aborted one, nothing twice; before that, the
// open transactions hold the last stable offset back.
func TestKill9KeepsTransactionsWhole(t *testing.T) {
	const (
		producers = 3
		rounds    = 3
	)
	b := newBroker(t, nil, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := func(addr string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	created, err := kadm.NewClient(client(p.Addr)).CreateTopic(ctx, txnPartitions, 1, nil, "txn")
	if err != nil {
		t.Fatal(err)
	}
	ledger := &txnLedger{}
	for round := 0; round < rounds; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < producers; i++ {
			cl := client(p.Addr)
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				runTxnProducer(ctx, cl, created.ID, rand.New(rand.NewSource(seed)), ledger, stop)
			}(int64(round*producers + i))
		}
		time.Sleep(time.Duration(400+300*round) * time.Millisecond)
		p.Kill9(t)
		close(stop)
		wg.Wait()

		p = run(t, b)
		cl := client(p.Addr)
		checkOpenTxnsHoldLSO(t, ctx, cl, ledger, round)
		completeTxns(t, ctx, cl, ledger)
		checkCommittedView(t, ctx, p.Addr, cl, ledger, round)
	}
}

// runTxnProducer writes transactions until stop or until the broker stops
// answering (it was killed): a producer id from InitProducerId, per
// transaction one transactional batch to each partition, then the markers.
func runTxnProducer(ctx context.Context, cl *kgo.Client, topicID [16]byte, rng *rand.Rand, l *txnLedger, stop chan struct{}) {
	init := kmsg.NewPtrInitProducerIDRequest()
	resp, err := init.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		return
	}
	pid, epoch := resp.ProducerID, resp.ProducerEpoch
	seq := make([]int32, txnPartitions)
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		r := &txnRun{pid: pid, first: map[int32]int64{}, marked: map[int32]bool{}}
		l.add(r)
		for part := int32(0); part < txnPartitions; part++ {
			values := make([]string, 1+rng.Intn(3))
			for i := range values {
				values[i] = fmt.Sprintf("%d-%d-%d-%d", pid, n, part, i)
			}
			l.update(func() { r.values = append(r.values, values...) })
			base, err := produceTxn(ctx, cl, topicID, part, pid, epoch, seq[part], values)
			if err != nil {
				return // the broker is gone; the transaction stays undecided
			}
			l.update(func() { r.first[part] = base })
			seq[part] += int32(len(values))
		}
		commit := rng.Intn(3) != 0
		l.update(func() { r.decided, r.commit = true, commit })
		for part := int32(0); part < txnPartitions; part++ {
			if marker(ctx, cl, part, pid, epoch, commit) != nil {
				return
			}
			l.update(func() { r.marked[part] = true })
		}
	}
}

func produceTxn(ctx context.Context, cl *kgo.Client, topicID [16]byte, part int32, pid int64, epoch int16, seq int32, values []string) (int64, error) {
	b := record.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, epoch, seq, true
	for _, v := range values {
		b.Add(time.Now().UnixMilli(), nil, []byte(v))
	}
	raw, err := b.Build()
	if err != nil {
		return 0, err
	}
	id := "crash"
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 3000, &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "txn", topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	defer ccancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return 0, err
	}
	sp := resp.Topics[0].Partitions[0]
	return sp.BaseOffset, kerr.ErrorForCode(sp.ErrorCode)
}

func marker(ctx context.Context, cl *kgo.Client, part int32, pid int64, epoch int16, commit bool) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "txn", []int32{part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	defer ccancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Markers[0].Topics[0].Partitions[0].ErrorCode)
}

// listOffsets returns, per partition, the latest offset at an isolation level.
func listOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, readCommitted bool) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	if readCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "txn"
	for part := int32(0); part < txnPartitions; part++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = part, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for attempt := 0; ; attempt++ {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			out := map[int32]int64{}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode == 0 {
					out[p.Partition] = p.Offset
				}
			}
			if len(out) == txnPartitions {
				return out
			}
		}
		if attempt == 50 {
			t.Fatalf("ListOffsets after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkOpenTxnsHoldLSO: right after the restart, a transaction whose
// outcome was never decided (so no marker of it was ever sent) and whose
// batch a partition acknowledged is still open there: the partition's last
// stable offset is at or below that batch.
func checkOpenTxnsHoldLSO(t *testing.T, ctx context.Context, cl *kgo.Client, l *txnLedger, round int) {
	t.Helper()
	lso, hw := listOffsets(t, ctx, cl, true), listOffsets(t, ctx, cl, false)
	l.mu.Lock()
	defer l.mu.Unlock()
	open := 0
	for part := int32(0); part < txnPartitions; part++ {
		if lso[part] > hw[part] {
			t.Fatalf("round %d: partition %d: LSO %d above the high watermark %d", round, part, lso[part], hw[part])
		}
		for _, r := range l.runs {
			if first, ok := r.first[part]; ok && !r.decided {
				open++
				if lso[part] > first {
					t.Fatalf("round %d: partition %d: LSO %d passed the open transaction of producer %d from %d", round, part, lso[part], r.pid, first)
				}
			}
		}
	}
	t.Logf("round %d: %d partitions held an undecided transaction at the kill", round, open)
}

// completeTxns does what a restarted coordinator does: a decided
// transaction gets its markers on every partition again (a marker written
// twice is harmless: the second ends nothing), an undecided one is aborted.
func completeTxns(t *testing.T, ctx context.Context, cl *kgo.Client, l *txnLedger) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if !r.decided {
			r.decided, r.commit = true, false
		}
		for part := int32(0); part < txnPartitions; part++ {
			if r.marked[part] {
				continue
			}
			var err error
			for attempt := 0; attempt < 50; attempt++ {
				if err = marker(ctx, cl, part, r.pid, 0, r.commit); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("completing producer %d's transaction on partition %d: %v", r.pid, part, err)
			}
			r.marked[part] = true
		}
	}
}

// checkCommittedView: once every transaction ended, the LSO is the high
// watermark and a read_committed consumer sees exactly the committed
// transactions, each whole, in order per partition, nothing twice.
func checkCommittedView(t *testing.T, ctx context.Context, addr string, cl *kgo.Client, l *txnLedger, round int) {
	t.Helper()
	lso, hw := listOffsets(t, ctx, cl, true), listOffsets(t, ctx, cl, false)
	for part := int32(0); part < txnPartitions; part++ {
		if lso[part] != hw[part] {
			t.Fatalf("round %d: partition %d: LSO %d, high watermark %d after every transaction ended", round, part, lso[part], hw[part])
		}
	}
	l.mu.Lock()
	committed, aborted := map[string]bool{}, map[string]bool{}
	for _, r := range l.runs {
		for _, v := range r.values {
			if r.commit {
				committed[v] = true
			} else {
				aborted[v] = true
			}
		}
	}
	l.mu.Unlock()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("txn"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	last := map[int32]int64{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := consumer.PollFetches(pctx)
		pcancel()
		for _, r := range fs.Records() {
			v := string(r.Value)
			switch {
			case aborted[v]:
				t.Fatalf("round %d: read_committed consumer saw %s of an aborted transaction", round, v)
			case !committed[v]:
				// An unacknowledged produce of a committed transaction cannot
				// be: the outcome is decided after every produce was answered.
				t.Fatalf("round %d: read_committed consumer saw %s, which no committed transaction wrote", round, v)
			case seen[v]:
				t.Fatalf("round %d: %s seen twice", round, v)
			}
			if r.Offset <= last[r.Partition] && last[r.Partition] != 0 {
				t.Fatalf("round %d: partition %d went back from %d to %d", round, r.Partition, last[r.Partition], r.Offset)
			}
			seen[v], last[r.Partition] = true, r.Offset
		}
		if len(seen) == len(committed) {
			break
		}
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("poll: %v", err)
		}
	}
	if len(seen) != len(committed) {
		var missing []string
		for v := range committed {
			if !seen[v] {
				missing = append(missing, v)
			}
		}
		t.Fatalf("round %d: %d committed records never seen by read_committed, e.g. %s", round, len(missing), strings.Join(missing[:min(5, len(missing))], ", "))
	}
	t.Logf("round %d: %d committed and %d aborted records; read_committed saw exactly the committed", round, len(committed), len(aborted))
}
