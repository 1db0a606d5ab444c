package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// transactional is a producer of id that has begun a transaction and
// written one record to topic.
func transactional(t *testing.T, addr, id, topic string, timeout time.Duration) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.TransactionTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(testkit.Context(t, 20*time.Second), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// The transaction series: ids by state, the duration histogram of
// completed transactions, the aborts of timed-out ones, and the LSO lag
// an open transaction causes on its partition.
func TestTransactionMetrics(t *testing.T) {
	b := brokertest.Start(t, config.Properties{
		"metrics.listener":                                            "127.0.0.1:0",
		"transaction.state.log.num.partitions":                        "1",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
	})
	addr, maddr := b.Addr(), b.MetricsAddr()
	testkit.CreateTopic(t, kadm.NewClient(testkit.Client(t, addr)), "t", 1, nil)
	ctx := testkit.Context(t, 30*time.Second)

	committed := transactional(t, addr, "committed", "t", time.Minute)
	if err := committed.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	aborted := transactional(t, addr, "aborted", "t", time.Minute)
	if err := aborted.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	transactional(t, addr, "open", "t", time.Minute)
	waitForSeries(t, maddr, 1, "kbroker_transactions", `state="Ongoing"`)
	waitForSeries(t, maddr, 1, "kbroker_transactions", `state="CompleteCommit"`)
	waitForSeries(t, maddr, 1, "kbroker_transactions", `state="CompleteAbort"`)
	waitForSeries(t, maddr, 0, "kbroker_transactions", `state="PrepareCommit"`)
	waitForSeries(t, maddr, 2, "kbroker_transaction_duration_seconds_count")
	waitForSeries(t, maddr, 2, "kbroker_transaction_duration_seconds_bucket", `le="+Inf"`)
	waitForSeries(t, maddr, 0, "kbroker_transactions_timed_out_total")
	// "open" holds read_committed consumers back: its record and nothing after.
	waitForSeries(t, maddr, 1, "kbroker_log_lso_lag", `topic="t"`)

	transactional(t, addr, "stuck", "t", time.Second) // never ended: the coordinator aborts it
	waitForSeries(t, maddr, 1, "kbroker_transactions_timed_out_total")
	waitForSeries(t, maddr, 3, "kbroker_transaction_duration_seconds_count")
	waitForSeries(t, maddr, 2, "kbroker_transactions", `state="CompleteAbort"`)
}
