package interop

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// In a 2-broker cluster on etcd, a transaction spans partitions led by both
// brokers, whichever broker coordinates it: Produce to the broker that is
// not the coordinator verifies the partition with the coordinator's broker
// (verify-only AddPartitionsToTxn, KIP-890), and the coordinator's markers
// reach the other broker as WriteTxnMarkers. Several transactional ids, so
// both brokers coordinate some; committed transactions are read whole with
// read_committed, aborted ones never.
func TestTransactionsAcrossTwoBrokers(t *testing.T) {
	etcd := etcdtest.Start(t)
	var brokers []*broker.Broker
	for id := 1; id <= 2; id++ {
		brokers = append(brokers, brokertest.Start(t, config.Properties{
			"node.id":                              strconv.Itoa(id),
			"metadata.etcd.endpoints":              etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms":     "2000",
			"metadata.etcd.request.timeout.ms":     "1000",
			"transaction.state.log.num.partitions": "4",
		}))
	}
	adm := newAdmin(t, brokers[0].Addr())
	testkit.CreateTopic(t, adm, "spread", 4, nil)
	seeds := kgo.SeedBrokers(brokers[0].Addr(), brokers[1].Addr())

	want := map[string]bool{}
	for i := range 4 {
		cl := testkit.Client(t, brokers[i%2].Addr(), seeds, kgo.TransactionalID(fmt.Sprintf("spread-%d", i)),
			kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		ctx := testkit.Context(t, 30*time.Second)
		for txn, commit := range []bool{true, false, true} {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for p := range 4 { // one record per partition: both brokers' partitions
				v := fmt.Sprintf("id%d-txn%d-r%d", i, txn, p)
				if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if commit {
					want[v] = true
				}
			}
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("transactional id %d, transaction %d: %v", i, txn, err)
			}
		}
	}

	consumer := testkit.Client(t, brokers[1].Addr(), seeds, kgo.ConsumeTopics("spread"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testkit.Context(t, 30*time.Second)
	seen := map[string]bool{}
	for len(seen) < len(want) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records", len(seen), len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if !want[v] {
				t.Errorf("read_committed read %s, which was aborted", v)
			}
			if seen[v] {
				t.Errorf("read %s twice", v)
			}
			seen[v] = true
		})
	}
}
