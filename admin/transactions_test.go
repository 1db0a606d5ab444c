package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/internal/config"
)

// txnBroker is a kbroker with a one-partition `__transaction_state` (one
// coordinator shard loads quickly) and topic t of two partitions.
func txnBroker(t *testing.T) (*admin.Client, string) {
	t.Helper()
	addr := targets[0].start(t, config.Properties{"transaction.state.log.num.partitions": "1"})
	c := connect(t, addr)
	mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 2, ReplicationFactor: 1})
	return c, addr
}

// openTransaction starts a transaction of id that wrote n records to
// partition 0 of t and leaves it open; the client is closed at cleanup.
func openTransaction(t *testing.T, addr, id string, n int) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := ctxT(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func TestTransactionsListDescribeAndDescribeProducers(t *testing.T) {
	c, addr := txnBroker(t)
	ctx := ctxT(t)
	cl := openTransaction(t, addr, "etl", 2)

	ls, err := c.ListTransactions(ctx, admin.ListTransactionsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].TransactionalID != "etl" || ls[0].State != "Ongoing" || ls[0].Coordinator != 1 {
		t.Fatalf("listing %+v, want etl Ongoing on broker 1", ls)
	}
	pid := ls[0].ProducerID
	for _, f := range []admin.ListTransactionsFilter{
		{States: []string{"CompleteCommit"}},
		{ProducerIDs: []int64{pid + 1}},
		{MinDuration: time.Hour},
		{Pattern: "e"},
	} {
		if ls, err := c.ListTransactions(ctx, f); err != nil || len(ls) != 0 {
			t.Errorf("filter %+v: %+v %v, want nothing", f, ls, err)
		}
	}
	time.Sleep(5 * time.Millisecond) // so that the transaction is open longer than MinDuration
	for _, f := range []admin.ListTransactionsFilter{
		{States: []string{"Ongoing"}},
		{ProducerIDs: []int64{pid}},
		{MinDuration: time.Millisecond},
		{Pattern: "et.*"},
		{States: []string{"Ongoing"}, ProducerIDs: []int64{pid}, MinDuration: time.Millisecond, Pattern: "et.*"},
	} {
		if ls, err := c.ListTransactions(ctx, f); err != nil || len(ls) != 1 {
			t.Errorf("filter %+v: %+v %v, want etl", f, ls, err)
		}
	}

	ds, err := c.DescribeTransactions(ctx, "etl", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	if d.Err != nil || d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMillis != 60000 || d.StartMillis <= 0 ||
		len(d.Partitions) != 1 || d.Partitions[0] != (admin.TopicPartition{Topic: "t", Partition: 0}) || d.Coordinator != 1 {
		t.Fatalf("description %+v", d)
	}
	if !errors.Is(ds[1].Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("unknown id: %v, want TRANSACTIONAL_ID_NOT_FOUND", ds[1].Err)
	}

	ps, err := c.DescribeProducers(ctx, admin.AnyBroker, admin.TopicPartition{Topic: "t", Partition: 0}, admin.TopicPartition{Topic: "t", Partition: 1})
	if err != nil || ps.All() != nil {
		t.Fatal(err, ps.All())
	}
	if len(ps[0].Producers) != 1 || ps[0].Producers[0].ProducerID != pid || ps[0].Producers[0].CurrentTxnStartOffset != 0 || ps[0].Producers[0].LastSequence != 1 {
		t.Fatalf("producers of t-0: %+v, want %d with a transaction from offset 0", ps[0].Producers, pid)
	}
	if len(ps[1].Producers) != 0 {
		t.Fatalf("producers of t-1: %+v, want none", ps[1].Producers)
	}
	if ps, err := c.DescribeProducers(ctx, 1, admin.TopicPartition{Topic: "t", Partition: 0}); err != nil || ps.All() != nil || len(ps[0].Producers) != 1 {
		t.Fatalf("on broker 1: %+v %v", ps, err)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		ds, err := c.DescribeTransactions(ctx, "etl")
		return err == nil && ds[0].State == "CompleteCommit" && ds[0].StartMillis == -1 && len(ds[0].Partitions) == 0
	}, "etl to be CompleteCommit")
}

// A transaction its coordinator still holds the partition for is not
// hanging, however old; aborting it on the partition (WriteTxnMarkers)
// ends it there: the producer has no open transaction any more.
func TestTransactionsFindHangingAndAbort(t *testing.T) {
	c, addr := txnBroker(t)
	ctx := ctxT(t)
	openTransaction(t, addr, "etl", 3)
	tp := admin.TopicPartition{Topic: "t", Partition: 0}

	for _, f := range []admin.HangingFilter{
		{Broker: 1, Partition: -1},
		{Broker: admin.AnyBroker, Topic: "t", Partition: -1},
		{Broker: admin.AnyBroker, Topic: "t", Partition: 0},
	} {
		hs, err := c.FindHangingTransactions(ctx, f, time.Now().Add(time.Hour))
		if err != nil || len(hs) != 0 {
			t.Fatalf("%+v: %+v %v, want none hanging (the coordinator has t-0 in etl's transaction)", f, hs, err)
		}
	}
	if _, err := c.FindHangingTransactions(ctx, admin.HangingFilter{Broker: admin.AnyBroker, Partition: -1}, time.Now()); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("no scope: %v, want a client-side INVALID_REQUEST", err)
	}

	if _, err := c.AbortSpecAt(ctx, tp, 1); !errors.Is(err, admin.ErrNoOpenTransaction) {
		t.Fatalf("abort spec at offset 1: %v, want no open transaction", err)
	}
	spec, err := c.AbortSpecAt(ctx, tp, 0)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := c.DescribeTransactions(ctx, "etl")
	if spec.ProducerID != ds[0].ProducerID || spec.ProducerEpoch != ds[0].ProducerEpoch || spec.CoordinatorEpoch < 0 {
		t.Fatalf("spec %+v, want etl's producer %d epoch %d", spec, ds[0].ProducerID, ds[0].ProducerEpoch)
	}
	if err := c.AbortTransaction(ctx, spec); err != nil {
		t.Fatal(err)
	}
	ps, err := c.DescribeProducers(ctx, admin.AnyBroker, tp)
	if err != nil || ps.All() != nil {
		t.Fatal(err, ps.All())
	}
	if len(ps[0].Producers) != 1 || ps[0].Producers[0].CurrentTxnStartOffset != -1 {
		t.Fatalf("after the abort: %+v, want the producer with no open transaction", ps[0].Producers)
	}
	// A stale epoch is refused by the partition.
	stale := spec
	stale.ProducerEpoch--
	if err := c.AbortTransaction(ctx, stale); err == nil && spec.ProducerEpoch > 0 {
		t.Fatalf("abort with epoch %d below the producer's %d succeeded", stale.ProducerEpoch, spec.ProducerEpoch)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
