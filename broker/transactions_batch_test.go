package broker_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/record"
	"kbroker/internal/testkit"
	"kbroker/internal/txn"
)

// txnBatch is one partition's transactional batch in a Produce.
type txnBatch struct {
	p         producer
	topic     string
	partition int32
	seq       int32
}

// produceTxnBatches sends one Produce of version holding every batch (the
// transactional id is the first batch's) and returns each partition's
// code, in the order of batches.
func produceTxnBatches(t *testing.T, rc *testkit.RawConn, version int16, batches ...txnBatch) []int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = version, -1, 10_000, &batches[0].p.id
	for _, tb := range batches {
		b := record.NewBuilder()
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = tb.p.pid, tb.p.epoch, tb.seq, true
		b.Add(time.Now().UnixMilli(), nil, []byte("v"))
		raw, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tb.topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tb.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = tb.partition, raw
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	var codes []int16
	for _, rt := range request[*kmsg.ProduceResponse](t, rc, req).Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	return codes
}

// stateRecords is how many records `__transaction_state` holds: every
// coordinator write is one batch of one record.
func stateRecords(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	var n int64
	for _, end := range endOffsets(t, cl, txn.Topic) {
		n += end
	}
	return n
}

// txnPartitions is what DescribeTransactions lists of topic in id's
// transaction, sorted.
func txnPartitions(t *testing.T, rc *testkit.RawConn, id, topic string) []int32 {
	t.Helper()
	var out []int32
	for _, dt := range describeTxn(t, rc, id).Topics {
		if dt.Topic == topic {
			out = append(out, dt.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func wantCodes(t *testing.T, what string, got []int16, want ...*kerr.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d partitions answered, want %d", what, len(got), len(want))
	}
	for i := range got {
		wantCode(t, what+" partition "+strconv.Itoa(i), got[i], want[i])
	}
}

// A TV2 Produce naming two partitions adds both to the transaction with
// one coordinator call, so one `__transaction_state` write (Kafka's
// AddPartitionsToTxnManager batches a request's partitions), not one per
// partition. Under TV1 (Produce v11) the partitions are verified together
// and answered one by one: the one added passes, the other is refused.
// Batches of two producers in one request are refused whole, as Kafka
// refuses them (INVALID_PRODUCER_ID_MAPPING).
func TestProduceAddsItsPartitionsToTheTransactionInOneWrite(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "batched", 2, nil)

	findTxnCoordinator(t, rc, "batched-tv2")
	p, code := initProducer(t, rc, "batched-tv2", 5, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	before := stateRecords(t, cl)
	wantCodes(t, "Produce v12 to two partitions",
		produceTxnBatches(t, rc, 12, txnBatch{p, "batched", 0, 0}, txnBatch{p, "batched", 1, 0}), nil, nil)
	if got := stateRecords(t, cl) - before; got != 1 {
		t.Fatalf("the Produce wrote %d __transaction_state records, want 1 for both partitions", got)
	}
	if got := txnPartitions(t, rc, p.id, "batched"); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("the transaction holds partitions %v of batched, want [0 1]", got)
	}
	if resp := endTxnV5(t, rc, p, true); resp.ErrorCode != 0 {
		t.Fatalf("EndTxn v5 commit: %+v", resp)
	}
	waitTxnState(t, rc, p.id, "CompleteCommit")

	q, code := initProducer(t, rc, "batched-tv1", 5, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	wantCodes(t, "AddPartitionsToTxn of partition 0", addPartitions(t, rc, q, "batched", 0), nil)
	ends := endOffsets(t, cl, "batched")
	wantCodes(t, "Produce v11 to an added and a not added partition",
		produceTxnBatches(t, rc, 11, txnBatch{q, "batched", 0, 0}, txnBatch{q, "batched", 1, 0}), nil, kerr.InvalidTxnState)
	if got := endOffsets(t, cl, "batched"); got[0] != ends[0]+1 || got[1] != ends[1] {
		t.Fatalf("log ends %v after the Produce, were %v: want partition 0 appended, 1 not", got, ends)
	}

	other := producer{id: q.id, pid: q.pid + 1000, epoch: q.epoch}
	wantCodes(t, "Produce v12 with batches of two producers",
		produceTxnBatches(t, rc, 12, txnBatch{q, "batched", 0, 1}, txnBatch{other, "batched", 1, 0}),
		kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping)
	if got := endOffsets(t, cl, "batched"); got[0] != ends[0]+1 || got[1] != ends[1] {
		t.Fatalf("log ends %v after the refused Produce, want %v with partition 0 at %d", got, ends, ends[0]+1)
	}
}

// The same on a broker that is not the transaction's coordinator: the
// partitions of one Produce go to the coordinator's broker in one
// AddPartitionsToTxn (v5 to add, one state write; v4 with VerifyOnly to
// verify, answered per partition).
func TestProduceToAnotherBrokerAsksTheCoordinatorOnceForAllItsPartitions(t *testing.T) {
	brokers := twoTxnBrokers(t, nil)
	cl := testkit.Client(t, brokers[0].Addr())
	adm := kadm.NewClient(cl)
	testkit.CreateTopic(t, adm, "remote", 8, nil)

	const tv2, tv1 = "remote-tv2", "remote-tv1"
	rc0 := testkit.Dial(t, brokers[0].Addr())
	coordinatorOf := func(id string) int32 {
		var node int32
		wantCode(t, "FindCoordinator", retrying(t, func() int16 {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{id}
			c := request[*kmsg.FindCoordinatorResponse](t, rc0, req).Coordinators[0]
			node = c.NodeID
			return c.ErrorCode
		}), nil)
		return node
	}
	// With two state partitions the two ids may have different
	// coordinators; each is asked about partitions the other broker leads.
	md, err := adm.Metadata(testkit.Context(t, 10*time.Second), "remote")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{tv2, tv1} {
		coordinator := coordinatorOf(id)
		coord, other := brokers[0], brokers[1]
		if coordinator == 2 {
			coord, other = brokers[1], brokers[0]
		}
		var remote []int32
		for _, pm := range md.Topics["remote"].Partitions {
			if pm.Leader != coordinator {
				remote = append(remote, pm.Partition)
			}
		}
		if len(remote) < 2 {
			t.Fatalf("fewer than two partitions of remote led away from broker %d: %+v", coordinator, md.Topics["remote"].Partitions)
		}
		slices.Sort(remote)
		remote = remote[:2]
		rcCoord, rcOther := testkit.Dial(t, coord.Addr()), testkit.Dial(t, other.Addr())
		p, code := initProducer(t, rcCoord, id, 5, 60_000)
		wantCode(t, "InitProducerId", code, nil)
		batches := []txnBatch{{p, "remote", remote[0], 0}, {p, "remote", remote[1], 0}}
		if id == tv2 {
			before := stateRecords(t, cl)
			wantCodes(t, "Produce v12 to two partitions of another broker", produceTxnBatches(t, rcOther, 12, batches...), nil, nil)
			if got := stateRecords(t, cl) - before; got != 1 {
				t.Fatalf("the remote Produce wrote %d __transaction_state records, want 1 for both partitions", got)
			}
			if got := txnPartitions(t, rcCoord, id, "remote"); !slices.Equal(got, remote) {
				t.Fatalf("the transaction holds partitions %v of remote, want %v", got, remote)
			}
			if resp := endTxnV5(t, rcCoord, p, true); resp.ErrorCode != 0 {
				t.Fatalf("EndTxn v5 commit: %+v", resp)
			}
			waitTxnState(t, rcCoord, id, "CompleteCommit")
			continue
		}
		wantCodes(t, "AddPartitionsToTxn of one partition", addPartitions(t, rcCoord, p, "remote", remote[0]), nil)
		wantCodes(t, "Produce v11 to an added and a not added partition of another broker",
			produceTxnBatches(t, rcOther, 11, batches...), nil, kerr.InvalidTxnState)
	}
}
