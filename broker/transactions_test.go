package broker_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/record"
	"kbroker/internal/storage"
	"kbroker/internal/testkit"
	"kbroker/internal/txn"
)

// txnProps start a broker with few internal-topic partitions to load.
func txnProps(dir string) config.Properties {
	return config.Properties{
		"listeners":                            "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                             dir,
		"transaction.state.log.num.partitions": "2",
		"offsets.topic.num.partitions":         "2",
		"group.initial.rebalance.delay.ms":     "0",
	}
}

// retrying repeats call while the coordinator is being created or loaded.
func retrying(t *testing.T, call func() int16) int16 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code := call()
		switch code {
		// NOT_ENOUGH_REPLICAS: a Produce's answer to those of its verification.
		case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.ConcurrentTransactions.Code,
			kerr.NotEnoughReplicas.Code:
			if time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		return code
	}
}

// request sends req at exactly its version to the only broker, which is
// every coordinator.
func request[T kmsg.Response](t *testing.T, rc *testkit.RawConn, req kmsg.Request) T {
	t.Helper()
	return rc.RoundTrip(req).(T)
}

func findTxnCoordinator(t *testing.T, rc *testkit.RawConn, id string) {
	t.Helper()
	code := retrying(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 4, 1, id, []string{id}
		c := request[*kmsg.FindCoordinatorResponse](t, rc, req).Coordinators[0]
		if c.ErrorCode == 0 && (c.NodeID < 0 || c.Port <= 0) {
			t.Fatalf("FindCoordinator answered no broker: %+v", c)
		}
		return c.ErrorCode
	})
	if code != 0 {
		t.Fatalf("FindCoordinator(transactional id %s): %v", id, kerr.ErrorForCode(code))
	}
}

type producer struct {
	id    string
	pid   int64
	epoch int16
}

func initProducer(t *testing.T, rc *testkit.RawConn, id string, version int16, timeoutMs int32) (producer, int16) {
	t.Helper()
	var resp *kmsg.InitProducerIDResponse
	code := retrying(t, func() int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = version, &id, timeoutMs
		resp = request[*kmsg.InitProducerIDResponse](t, rc, req)
		return resp.ErrorCode
	})
	return producer{id, resp.ProducerID, resp.ProducerEpoch}, code
}

func addPartitions(t *testing.T, rc *testkit.RawConn, p producer, topic string, partitions ...int32) []int16 {
	t.Helper()
	var codes []int16
	retrying(t, func() int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, p.id, p.pid, p.epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, partitions
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.AddPartitionsToTxnResponse](t, rc, req)
		if len(resp.Topics) != 1 {
			t.Fatalf("AddPartitionsToTxn v%d answered %+v", resp.Version, resp)
		}
		codes = codes[:0]
		for _, rp := range resp.Topics[0].Partitions {
			codes = append(codes, rp.ErrorCode)
		}
		return codes[0]
	})
	return codes
}

func endTxn(t *testing.T, rc *testkit.RawConn, p producer, version int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, p.id, p.pid, p.epoch, commit
	return request[*kmsg.EndTxnResponse](t, rc, req).ErrorCode
}

func describeTxn(t *testing.T, rc *testkit.RawConn, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return request[*kmsg.DescribeTransactionsResponse](t, rc, req).TransactionStates[0]
}

// waitTxnState waits for id to reach state (markers are written after
// EndTxn is answered).
func waitTxnState(t *testing.T, rc *testkit.RawConn, id, state string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := describeTxn(t, rc, id)
		if d.ErrorCode == 0 && d.State == state {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %q (%v), want %s", id, d.State, kerr.ErrorForCode(d.ErrorCode), state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endOffsets is the log end offset of each partition of topic (a marker
// takes an offset).
func endOffsets(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(testkit.Context(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// A transaction through the coordinator over TCP: FindCoordinator key type
// 1 creates __transaction_state, InitProducerId, AddPartitionsToTxn (and
// its refusals), EndTxn commit and abort with their markers in the logs,
// retries, fencing, DescribeTransactions and ListTransactions.
func TestTransactionCoordinatorOverTCP(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "t", 2, nil)
	findTxnCoordinator(t, rc, "tx")

	if _, code := initProducer(t, rc, "tx", 4, 900_001); code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("a timeout over transaction.max.timeout.ms: %v", kerr.ErrorForCode(code))
	}
	p, code := initProducer(t, rc, "tx", 4, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	if p.epoch != 0 || p.pid < 0 {
		t.Fatalf("InitProducerId: %+v", p)
	}
	wantCode(t, "EndTxn with nothing added", endTxn(t, rc, p, 3, true), kerr.InvalidTxnState)
	if codes := addPartitions(t, rc, p, "nope", 0); codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn of an unknown topic: %v", codes)
	}
	if codes := addPartitions(t, rc, p, "t", 0, 7); codes[0] != kerr.OperationNotAttempted.Code || codes[1] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn with an unknown partition: %v", codes)
	}
	if codes := addPartitions(t, rc, p, "t", 0, 1); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", codes)
	}
	if d := describeTxn(t, rc, "tx"); d.State != "Ongoing" || d.ProducerID != p.pid || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Fatalf("DescribeTransactions: %+v", d)
	}
	// franz-go's admin client finds the coordinator and reads the same.
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeTransactions(testkit.Context(t, 10*time.Second), "tx")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["tx"]; d.Err != nil || d.State != "Ongoing" || d.ProducerID != p.pid || len(d.Topics["t"]) != 2 || d.TimeoutMillis != 60_000 {
		t.Fatalf("kadm DescribeTransactions: %+v", d)
	}
	listed, err := adm.ListTransactions(testkit.Context(t, 10*time.Second), nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["tx"]; !ok || len(listed) != 1 || l.ProducerID != p.pid {
		t.Fatalf("kadm ListTransactions: %+v", listed)
	}
	wantCode(t, "EndTxn commit", endTxn(t, rc, p, 3, true), nil)
	waitTxnState(t, rc, "tx", "CompleteCommit")
	if ends := endOffsets(t, cl, "t"); ends[0] != 1 || ends[1] != 1 {
		t.Fatalf("end offsets after the commit markers: %v", ends)
	}
	wantCode(t, "a retried EndTxn commit", endTxn(t, rc, p, 3, true), nil)
	wantCode(t, "EndTxn abort after the commit", endTxn(t, rc, p, 3, false), kerr.InvalidTxnState)

	addPartitions(t, rc, p, "t", 1)
	wantCode(t, "EndTxn abort", endTxn(t, rc, p, 3, false), nil)
	waitTxnState(t, rc, "tx", "CompleteAbort")
	if ends := endOffsets(t, cl, "t"); ends[0] != 1 || ends[1] != 2 {
		t.Fatalf("end offsets after the abort marker: %v", ends)
	}

	next, code := initProducer(t, rc, "tx", 4, 60_000)
	wantCode(t, "InitProducerId again", code, nil)
	if next.pid != p.pid || next.epoch != 1 {
		t.Fatalf("second InitProducerId: %+v", next)
	}
	wantCode(t, "EndTxn v3 of the fenced producer", endTxn(t, rc, p, 3, true), kerr.ProducerFenced)
	wantCode(t, "EndTxn v1 of the fenced producer", endTxn(t, rc, p, 1, true), kerr.InvalidProducerEpoch)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 3, &p.id, 60_000
	req.ProducerID, req.ProducerEpoch = p.pid, 7
	wantCode(t, "InitProducerId v3 naming an epoch never given", request[*kmsg.InitProducerIDResponse](t, rc, req).ErrorCode, kerr.InvalidProducerEpoch)

	list := kmsg.NewPtrListTransactionsRequest()
	list.Version = 1
	list.StateFilters = []string{"Empty", "Bogus"}
	lr := request[*kmsg.ListTransactionsResponse](t, rc, list)
	if len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "tx" || lr.TransactionStates[0].ProducerID != p.pid ||
		len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("ListTransactions: %+v", lr)
	}
	list.StateFilters = []string{"Ongoing"}
	if lr := request[*kmsg.ListTransactionsResponse](t, rc, list); len(lr.TransactionStates) != 0 {
		t.Fatalf("ListTransactions of Ongoing: %+v", lr.TransactionStates)
	}
	if d := describeTxn(t, rc, "unknown"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions of an unknown id: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}

// Offsets committed in a transaction are pending (UNSTABLE_OFFSET_COMMIT
// with RequireStable, the last committed without) until the commit marker
// the coordinator writes to the group's __consumer_offsets partition.
func TestTxnOffsetCommitIsPendingUntilTheMarker(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "t", 1, nil)
	findTxnCoordinator(t, rc, "tx")
	code := retrying(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = 4, "g", []string{"g"}
		return request[*kmsg.FindCoordinatorResponse](t, rc, req).Coordinators[0].ErrorCode
	})
	wantCode(t, "FindCoordinator(group)", code, nil)
	p, code := initProducer(t, rc, "tx", 4, 60_000)
	wantCode(t, "InitProducerId", code, nil)

	wantCode(t, "AddOffsetsToTxn", retrying(t, func() int16 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, p.id, p.pid, p.epoch, "g"
		return request[*kmsg.AddOffsetsToTxnResponse](t, rc, req).ErrorCode
	}), nil)
	wantCode(t, "TxnOffsetCommit", retrying(t, func() int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, p.id, "g", p.pid, p.epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 42
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return request[*kmsg.TxnOffsetCommitResponse](t, rc, req).Topics[0].Partitions[0].ErrorCode
	}), nil)
	fetch := func(stable bool) (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.RequireStable = 8, stable
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		g := request[*kmsg.OffsetFetchResponse](t, rc, req).Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("OffsetFetch: %v", kerr.ErrorForCode(g.ErrorCode))
		}
		return g.Topics[0].Partitions[0].Offset, g.Topics[0].Partitions[0].ErrorCode
	}
	if off, code := fetch(false); off != -1 || code != 0 {
		t.Fatalf("without RequireStable before the commit: %d, %v", off, kerr.ErrorForCode(code))
	}
	if _, code := fetch(true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("RequireStable before the commit: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "EndTxn commit", endTxn(t, rc, p, 3, true), nil)
	waitTxnState(t, rc, "tx", "CompleteCommit")
	if off, code := fetch(true); off != 42 || code != 0 {
		t.Fatalf("RequireStable after the commit: %d, %v", off, kerr.ErrorForCode(code))
	}
}

// A broker restarted over its bbolt store and logs finds an ongoing
// transaction as it was, and completes one left in PrepareCommit: its
// markers are written, then CompleteCommit.
func TestTransactionsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	props := txnProps(dir)
	b := brokertest.StartWith(t, props)
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "t", 2, nil)
	findTxnCoordinator(t, rc, "ongoing")
	ongoing, code := initProducer(t, rc, "ongoing", 4, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	addPartitions(t, rc, ongoing, "t", 0)
	prepared, code := initProducer(t, rc, "prepared", 4, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	addPartitions(t, rc, prepared, "t", 1)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	writePrepareCommit(t, dir, prepared, "t", 1)

	b = brokertest.StartWith(t, props)
	cl = testkit.Client(t, b.Addr())
	rc = testkit.Dial(t, b.Addr())
	findTxnCoordinator(t, rc, "prepared")
	waitTxnState(t, rc, "prepared", "CompleteCommit")
	if ends := endOffsets(t, cl, "t"); ends[1] != 1 || ends[0] != 0 {
		t.Fatalf("end offsets after the restart: %v (a commit marker on t-1 only)", ends)
	}
	d := describeTxn(t, rc, "ongoing")
	if d.State != "Ongoing" || d.ProducerEpoch != ongoing.epoch || len(d.Topics) != 1 || d.Topics[0].Partitions[0] != 0 {
		t.Fatalf("the ongoing transaction after the restart: %+v", d)
	}
	wantCode(t, "EndTxn of the restored transaction", endTxn(t, rc, ongoing, 3, false), nil)
	waitTxnState(t, rc, "ongoing", "CompleteAbort")
}

// writePrepareCommit appends to the stopped broker's __transaction_state
// log the record a coordinator writes when EndTxn(commit) arrives, as if
// the broker died before writing the markers.
func writePrepareCommit(t *testing.T, dir string, p producer, topic string, partition int32) {
	t.Helper()
	tp := txn.Partition(p.id, 2)
	l, err := storage.Open(filepath.Join(dir, fmt.Sprintf("%s-%d", txn.Topic, tp)), storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: p.id}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = 1, p.pid, p.epoch, 60_000
	v.State = kmsg.TransactionStatePrepareCommit
	vt := kmsg.NewTxnMetadataValueTopic()
	vt.Topic, vt.Partitions = topic, []int32{partition}
	v.Topics = append(v.Topics, vt)
	now := time.Now().UnixMilli()
	v.LastUpdateTimestamp, v.StartTimestamp, v.PreviousProducerID, v.NextProducerID = now, now, -1, -1
	bb := record.NewBuilder()
	bb.Add(now, k.AppendTo(nil), v.AppendTo(nil))
	raw, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(raw, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// Requests a misbehaving or confused client sends get Kafka's codes, and
// nothing is half-applied.
func TestTransactionalAPIsRefuseBadInput(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "t", 1, nil)
	findTxnCoordinator(t, rc, "tx")

	if _, code := initProducer(t, rc, "", 4, 60_000); code != kerr.InvalidRequest.Code {
		t.Fatalf("InitProducerId with an empty transactional id: %v", kerr.ErrorForCode(code))
	}
	unknown := producer{"never-initialized", 12345, 0}
	findTxnCoordinator(t, rc, unknown.id)
	if codes := addPartitions(t, rc, unknown, "t", 0); codes[0] != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("AddPartitionsToTxn of an unknown id: %v", kerr.ErrorForCode(codes[0]))
	}
	wantCode(t, "EndTxn of an unknown id", endTxn(t, rc, unknown, 3, true), kerr.InvalidProducerIDMapping)

	p, code := initProducer(t, rc, "tx", 4, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	if codes := addPartitions(t, rc, p, "__consumer_offsets", 0); codes[0] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("AddPartitionsToTxn of an internal topic: %v", kerr.ErrorForCode(codes[0]))
	}
	if codes := addPartitions(t, rc, p, "t", -1); codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn of partition -1: %v", kerr.ErrorForCode(codes[0]))
	}
	if d := describeTxn(t, rc, "tx"); d.State != "Empty" || len(d.Topics) != 0 {
		t.Fatalf("refused adds changed the transaction: %+v", d)
	}

	// The broker's verification (v4, VerifyOnly) of a partition not added.
	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = p.id, p.pid, p.epoch, true
	vt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	vt.Topic, vt.Partitions = "t", []int32{0}
	tx.Topics = append(tx.Topics, vt)
	verify.Transactions = append(verify.Transactions, tx)
	vr := request[*kmsg.AddPartitionsToTxnResponse](t, rc, verify)
	if vr.ErrorCode != 0 || vr.Transactions[0].Topics[0].Partitions[0].ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("verification of a partition not added: %+v", vr)
	}
	addPartitions(t, rc, p, "t", 0)
	vr = request[*kmsg.AddPartitionsToTxnResponse](t, rc, verify)
	if vr.ErrorCode != 0 || vr.Transactions[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("verification of an added partition: %+v", vr)
	}

	list := kmsg.NewPtrListTransactionsRequest()
	list.Version, list.TransactionalIDPattern = 2, new(string)
	*list.TransactionalIDPattern = "("
	wantCode(t, "ListTransactions with a bad pattern", request[*kmsg.ListTransactionsResponse](t, rc, list).ErrorCode, kerr.InvalidRegularExpression)
	*list.TransactionalIDPattern = "t."
	if lr := request[*kmsg.ListTransactionsResponse](t, rc, list); len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionState != "Ongoing" {
		t.Fatalf("ListTransactions by pattern: %+v", lr.TransactionStates)
	}
	*list.TransactionalIDPattern = "t"
	if lr := request[*kmsg.ListTransactionsResponse](t, rc, list); len(lr.TransactionStates) != 0 {
		t.Fatalf("a pattern matches the whole id, not a prefix: %+v", lr.TransactionStates)
	}
}

// franz-go's transactional producer end to end: a committed and an aborted
// transaction, read back read_committed (the committed records only) and
// read_uncommitted (both).
func TestFranzGoTransactionalProducer(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	admin := testkit.Client(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(admin), "t", 2, nil)
	cl := testkit.Client(t, b.Addr(), kgo.TransactionalID("franz"), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testkit.Context(t, 30*time.Second)
	run := func(commit bool, values ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	run(true, "c1", "c2", "c3")
	run(false, "a1", "a2")
	run(true, "c4")
	read := func(level kgo.IsolationLevel, want int) map[string]bool {
		t.Helper()
		consumer := testkit.Client(t, b.Addr(), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		seen := map[string]bool{}
		for len(seen) < want {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %v of %d records", seen, want)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
		return seen
	}
	committed := read(kgo.ReadCommitted(), 4)
	for _, v := range []string{"a1", "a2"} {
		if committed[v] {
			t.Fatalf("read_committed saw the aborted %s", v)
		}
	}
	if all := read(kgo.ReadUncommitted(), 6); len(all) != 6 {
		t.Fatalf("read_uncommitted: %v", all)
	}
}
