package interop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// txnProps start a broker whose `__transaction_state` has one partition
// (one coordinator shard to load) and whose groups rebalance at once.
var txnProps = config.Properties{
	"transaction.state.log.num.partitions": "1",
	"offsets.topic.num.partitions":         "1",
	"group.initial.rebalance.delay.ms":     "0",
}

// The first transactional id creates `__transaction_state`: listed as
// internal, as `__consumer_offsets` is, and closed to producers (only the
// coordinator writes it).
func TestTransactionStateTopicIsInternal(t *testing.T) {
	addr := startBroker(t, txnProps)
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "data", 1, nil)
	ctx := testkit.Context(t, 20*time.Second)
	p := testkit.Client(t, addr, kgo.TransactionalID("internal-check"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "data", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopicsWithInternal(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	if d := details["__transaction_state"]; d.Err != nil || !d.IsInternal || len(d.Partitions) != 1 {
		t.Fatalf("__transaction_state: err %v internal %v partitions %d; want internal with 1", d.Err, d.IsInternal, len(d.Partitions))
	}
	if listed, err := adm.ListTopics(ctx); err != nil || listed.Has("__transaction_state") {
		t.Fatalf("ListTopics without internal topics lists __transaction_state (%v)", err)
	}
	cl := testkit.Client(t, addr)
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "__transaction_state", Value: []byte("junk")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to __transaction_state: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
}

// sarama's transactional producer commits one transaction, aborts one and
// commits another; a read_committed sarama consumer gets the committed
// records only, a read_uncommitted one every record.
func TestSaramaTransactions(t *testing.T) {
	addr := startBroker(t, txnProps)
	testkit.CreateTopic(t, newAdmin(t, addr), "sarama-txn", 1, nil)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "sarama-txn"
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()
	send := func(prefix string, commit bool) {
		t.Helper()
		if err := producer.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		for i := range 5 {
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "sarama-txn", Value: sarama.StringEncoder(fmt.Sprintf("%s%d", prefix, i))}); err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
		}
		end := producer.CommitTxn
		if !commit {
			end = producer.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end of transaction %s (commit %v): %v", prefix, commit, err)
		}
	}
	send("c", true)
	send("a", false)
	send("d", true)

	committed := []string{"c0", "c1", "c2", "c3", "c4", "d0", "d1", "d2", "d3", "d4"}
	all := []string{"c0", "c1", "c2", "c3", "c4", "a0", "a1", "a2", "a3", "a4", "d0", "d1", "d2", "d3", "d4"}
	if got := saramaConsume(t, addr, sarama.ReadCommitted, len(committed)); !slices.Equal(got, committed) {
		t.Fatalf("read_committed: %v, want %v", got, committed)
	}
	if got := saramaConsume(t, addr, sarama.ReadUncommitted, len(all)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted: %v, want %v", got, all)
	}
}

// saramaConsume reads partition 0 of sarama-txn from the start at the
// isolation level until it has n values, then for a moment more, so that
// a record it should not see would show.
func saramaConsume(t *testing.T, addr string, level sarama.IsolationLevel, n int) []string {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Consumer.IsolationLevel = level
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition("sarama-txn", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition: %v", err)
	}
	defer pc.Close()
	var got []string
	deadline := time.After(20 * time.Second)
	var extra <-chan time.Time
	for {
		if len(got) == n && extra == nil {
			extra = time.After(500 * time.Millisecond)
		}
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-extra:
			return got
		case <-deadline:
			t.Fatalf("isolation %d: got %v, want %d values", level, got, n)
		}
	}
}

// franz-go's GroupTransactSession copies "ctp-in" to "ctp-out" exactly once
// when a second instance with the same transactional id takes over: the
// second's InitProducerId fences the first, whose open transaction is
// aborted and whose End fails; the second carries on from the first's
// last committed offsets, so read_committed readers of the output see
// every input record once and a read_uncommitted reader also sees the
// first's aborted copies.
func TestFranzGroupTransactSessionFencesTheOldInstance(t *testing.T) {
	const n = 100
	addr := startBroker(t, txnProps)
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "ctp-in", 2, nil)
	testkit.CreateTopic(t, adm, "ctp-out", 1, nil)
	testkit.CreateTopic(t, adm, "ctp-scratch", 1, nil)
	in := testkit.Client(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testkit.Context(t, 60*time.Second)
	for i := range n {
		if err := in.ProduceSync(ctx, &kgo.Record{Topic: "ctp-in", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	first := ctpSession(t, addr)
	copied := 0
	for copied < n/2 {
		copied += ctpStep(t, ctx, first, kgo.TryCommit)
	}
	// The first instance copies another batch but has not ended its
	// transaction when the second starts.
	if err := first.Begin(); err != nil {
		t.Fatal(err)
	}
	var pending int
	for pending == 0 {
		fs := first.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pending++
			if err := first.ProduceSync(ctx, &kgo.Record{Topic: "ctp-out", Value: r.Value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		})
	}

	second := ctpSession(t, addr)
	// The second instance's first transactional produce initializes its
	// producer id: the coordinator bumps the epoch, which fences the first
	// and aborts its open transaction. Its scratch record is aborted.
	if err := second.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, &kgo.Record{Topic: "ctp-scratch", Value: []byte("scratch")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := second.End(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	committed, err := first.End(ctx, kgo.TryCommit)
	if committed || err == nil {
		t.Fatalf("fenced instance's End: committed %v, err %v; want an error", committed, err)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced instance's End failed with %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	first.Close()

	for got := readCTPOut(t, addr, kgo.ReadCommitted(), 0); len(got) < n; got = readCTPOut(t, addr, kgo.ReadCommitted(), 0) {
		if ctx.Err() != nil {
			t.Fatalf("copied %d of %d", len(got), n)
		}
		ctpStep(t, ctx, second, kgo.TryCommit)
	}
	second.Close()

	got := readCTPOut(t, addr, kgo.ReadCommitted(), 500*time.Millisecond)
	var values []int
	for _, v := range got {
		i, _ := strconv.Atoi(v)
		values = append(values, i)
	}
	wantValues(t, "read_committed output", values, 0, n)
	if all := readCTPOut(t, addr, kgo.ReadUncommitted(), 500*time.Millisecond); len(all) != n+pending {
		t.Fatalf("read_uncommitted output: %d records, want %d (every record plus the %d the fenced instance wrote)", len(all), n+pending, pending)
	}
}

func ctpSession(t *testing.T, addr string) *kgo.GroupTransactSession {
	t.Helper()
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("ctp"), kgo.ConsumerGroup("ctp"),
		kgo.ConsumeTopics("ctp-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// ctpStep copies one poll's records in one transaction and returns how
// many were copied and committed.
func ctpStep(t *testing.T, ctx context.Context, s *kgo.GroupTransactSession, end kgo.TransactionEndTry) int {
	t.Helper()
	pollCtx, cancel := context.WithTimeout(ctx, time.Second)
	fs := s.PollRecords(pollCtx, 10)
	cancel()
	if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if fs.NumRecords() == 0 {
		return 0
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	fs.EachRecord(func(r *kgo.Record) {
		s.Produce(ctx, &kgo.Record{Topic: "ctp-out", Value: r.Value}, nil)
	})
	committed, err := s.End(ctx, end)
	if err != nil {
		t.Fatal(err)
	}
	if !committed {
		return 0
	}
	return fs.NumRecords()
}

// readCTPOut reads ctp-out from the start at the isolation level until it
// is idle for idle (at least one fetch).
func readCTPOut(t *testing.T, addr string, level kgo.IsolationLevel, idle time.Duration) []string {
	t.Helper()
	cl := testkit.Client(t, addr, kgo.ConsumeTopics("ctp-out"), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), max(idle, 300*time.Millisecond))
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
}
