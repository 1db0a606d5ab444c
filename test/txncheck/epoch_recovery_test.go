package txncheck

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

// A Transactions V2 producer whose EndTxn the broker wrote but whose
// answer was lost to a kill -9 recovers, once the broker is back, with
// InitProducerId at the epoch it had (KIP-360; franz-go does this after an
// unconfirmed EndTxn): it gets the epoch the EndTxn bumped to, not
// PRODUCER_FENCED. The restarted coordinator has only the
// __transaction_state record, which holds the bumped epoch alone; seen
// as fatal PRODUCER_FENCED errors in franz-go's TestTxnEtl under kill -9
// restarts.
func TestKill9AfterEndTxnLeavesTheProducerItsEpoch(t *testing.T) {
	b := testbin.NewBroker(t, map[string]string{"transaction.state.log.num.partitions": "1"})
	proc := b.Start(t)
	admin := testkit.Client(t, proc.Addr)
	if _, err := kadm.NewClient(admin).CreateTopic(testkit.Context(t, 10*time.Second), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	const id = "recovering"
	rc := testkit.Dial(t, proc.Addr)
	findCoordinator(t, rc, id)
	first := initProducerID(t, rc, id, -1, -1)
	if first.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", kerr.ErrorForCode(first.ErrorCode))
	}
	pid, epoch := first.ProducerID, first.ProducerEpoch
	if code := retryWhileLoading(t, func() int16 { return produceV12(t, rc, id, pid, epoch) }); code != 0 {
		t.Fatalf("Produce v12: %s", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 5, id, pid, epoch, false
	if resp := rc.RoundTrip(end).(*kmsg.EndTxnResponse); resp.ErrorCode != 0 || resp.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 abort: %+v", resp)
	}
	// The producer never reads that answer: the broker is killed once the
	// abort is complete, before anything else is written.
	waitState(t, rc, id, "CompleteAbort")
	proc.Kill9(t)

	proc = b.Start(t)
	rc = testkit.Dial(t, proc.Addr)
	findCoordinator(t, rc, id)
	again := initProducerID(t, rc, id, pid, epoch)
	if again.ErrorCode != 0 || again.ProducerID != pid || again.ProducerEpoch != epoch+1 {
		t.Fatalf("InitProducerId at epoch %d after the kill: %s, producer %d epoch %d; want producer %d epoch %d",
			epoch, kerr.ErrorForCode(again.ErrorCode), again.ProducerID, again.ProducerEpoch, pid, epoch+1)
	}
	if code := retryWhileLoading(t, func() int16 { return produceV12(t, rc, id, pid, epoch+1) }); code != 0 {
		t.Fatalf("Produce v12 at the recovered epoch: %s", kerr.ErrorForCode(code))
	}
}

// retryWhileLoading repeats call while the answer is one a client retries
// after a restart (the coordinator loading, markers still being written).
func retryWhileLoading(t *testing.T, call func() int16) int16 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code := call()
		switch code {
		case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code,
			kerr.ConcurrentTransactions.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code:
			if time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		return code
	}
}

func initProducerID(t *testing.T, rc *testkit.RawConn, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	var resp *kmsg.InitProducerIDResponse
	retryWhileLoading(t, func() int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 5, &id, 60_000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp = rc.RoundTrip(req).(*kmsg.InitProducerIDResponse)
		return resp.ErrorCode
	})
	return resp
}

// findCoordinator asks for id's transaction coordinator until it is
// there: the first ask creates __transaction_state.
func findCoordinator(t *testing.T, rc *testkit.RawConn, id string) {
	t.Helper()
	code := retryWhileLoading(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{id}
		return rc.RoundTrip(req).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode
	})
	if code != 0 {
		t.Fatalf("FindCoordinator: %s", kerr.ErrorForCode(code))
	}
}

// produceV12 sends one transactional record to t-0 at sequence 0 of the
// epoch: Produce v12 adds the partition to the transaction (TV2).
func produceV12(t *testing.T, rc *testkit.RawConn, id string, pid int64, epoch int16) int16 {
	t.Helper()
	bb := record.NewBuilder()
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, 0, true
	bb.Add(time.Now().UnixMilli(), nil, []byte("v"))
	raw, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 12, -1, 10_000, &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return rc.RoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

func waitState(t *testing.T, rc *testkit.RawConn, id, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		d := rc.RoundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		if d.ErrorCode == 0 && d.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s is %s (error %d), want %s", id, d.State, d.ErrorCode, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
