package api_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/record"
	"kbroker/internal/testkit"
)

// txnProducer writes transactional batches the way a transactional client
// does, with a producer id from InitProducerId for its transactional id and
// its partition added to the coordinator's transaction (Produce verifies
// it, KIP-890), and ends its transactions the way a coordinator does, with
// WriteTxnMarkers: the coordinator's own transaction stays open meanwhile,
// so the data plane is tested on its own.
type txnProducer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	id    [16]byte // kgo sends Produce v13, which names topics by id
	pid   int64
	epoch int16
	seq   int32
}

func newTxnProducer(t *testing.T, cl *kgo.Client, topic kadm.CreateTopicResponse) *txnProducer {
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr("tx")
	init.TransactionTimeoutMillis = 60000
	resp, err := init.RequestWith(ctx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", resp, err)
	}
	return &txnProducer{t: t, cl: cl, topic: topic.Topic, id: topic.ID, pid: resp.ProducerID, epoch: resp.ProducerEpoch}
}

func (p *txnProducer) batch(transactional bool, values ...string) []byte {
	b := record.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = p.pid, p.epoch, p.seq, transactional
	for _, v := range values {
		b.Add(time.Now().UnixMilli(), nil, []byte(v))
	}
	raw, err := b.Build()
	if err != nil {
		p.t.Fatal(err)
	}
	return raw
}

// produce sends one batch in a raw Produce and returns the partition's
// answer; the sequence moves on when it was appended.
func (p *txnProducer) produce(txnID *string, raw []byte, n int) kmsg.ProduceResponseTopicPartition {
	p.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = p.topic, p.id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx(p.t), p.cl.Broker(1))
	if err != nil {
		p.t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode == 0 {
		p.seq += int32(n)
	}
	return sp
}

// join adds the producer's partition to its transaction at the
// coordinator, as a client does before its first produce to it.
func (p *txnProducer) join() {
	p.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", p.pid, p.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = p.topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx(p.t), p.cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		p.t.Fatalf("AddPartitionsToTxn: %+v %v", resp, err)
	}
}

func (p *txnProducer) send(values ...string) int64 {
	p.t.Helper()
	p.join()
	id := "tx"
	sp := p.produce(&id, p.batch(true, values...), len(values))
	if sp.ErrorCode != 0 {
		p.t.Fatalf("transactional produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	return sp.BaseOffset
}

func writeMarker(t *testing.T, cl *kgo.Client, topic string, partition int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx(t), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

func (p *txnProducer) end(commit bool) {
	p.t.Helper()
	if code := writeMarker(p.t, p.cl, p.topic, 0, p.pid, p.epoch, commit, 3); code != 0 {
		p.t.Fatalf("WriteTxnMarkers: %v", kerr.ErrorForCode(code))
	}
}

func listLatest(t *testing.T, cl *kgo.Client, topic string, readCommitted bool) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	if readCommitted {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx(t), cl.Broker(1))
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets: %v %v", resp, err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// consumeValues reads topic from the start with a kgo consumer at the given
// isolation level until it has the record whose value is last, then polls
// once more for anything that should not be there.
func consumeValues(t *testing.T, b *broker.Broker, topic string, isolation kgo.IsolationLevel, last string) []string {
	t.Helper()
	cl := testkit.Client(t, b.Addr(), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && !slices.Contains(out, last) {
		for _, r := range cl.PollFetches(testkit.Context(t, time.Second)).Records() {
			out = append(out, string(r.Value))
		}
	}
	for _, r := range cl.PollFetches(testkit.Context(t, 500*time.Millisecond)).Records() {
		out = append(out, string(r.Value))
	}
	return out
}

func TestTransactionalProduceMarkersAndReadCommittedFetch(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"metrics.listener": "127.0.0.1:0"})
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	p := newTxnProducer(t, cl, topic)
	p.send("c1", "c2")          // 0-1
	p.end(true)                 // 2
	first := p.send("a1", "a2") // 3-4, open
	if got := listLatest(t, cl, "t", true); got != first {
		t.Fatalf("ListOffsets latest read_committed = %d while a transaction is open from %d", got, first)
	}
	if got := listLatest(t, cl, "t", false); got != 5 {
		t.Fatalf("ListOffsets latest read_uncommitted = %d, want 5", got)
	}
	const lag = `kbroker_log_lso_lag{partition="0",topic="t"} `
	if text := testkit.ScrapeMetrics(t, b.MetricsAddr()); !strings.Contains(text, lag+"2\n") {
		t.Fatalf("/metrics lacks %s2 while the transaction from 3 to 4 is open", lag)
	}

	// A read_committed fetch waiting at the LSO is answered by the marker.
	fetch := longPoll(topic, 1, time.Minute)
	fetch.IsolationLevel = 1
	fetch.Topics[0].Partitions[0].FetchOffset = first
	done := sendFetch(t, cl, fetch)
	time.Sleep(300 * time.Millisecond)
	select {
	case a := <-done:
		t.Fatalf("read_committed fetch answered before the marker: %+v", a.resp)
	default:
	}
	p.end(false) // 5: abort
	a := receive(t, done)
	fp := a.resp.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.LastStableOffset != 6 || fp.HighWatermark != 6 || len(fp.RecordBatches) == 0 {
		t.Fatalf("woken fetch: error %d, LSO %d, HW %d, %d bytes", fp.ErrorCode, fp.LastStableOffset, fp.HighWatermark, len(fp.RecordBatches))
	}
	if len(fp.AbortedTransactions) != 1 || fp.AbortedTransactions[0].ProducerID != p.pid || fp.AbortedTransactions[0].FirstOffset != first {
		t.Fatalf("aborted transactions %+v, want producer %d from %d", fp.AbortedTransactions, p.pid, first)
	}
	p.send("c3") // 6
	p.end(true)  // 7
	if got := listLatest(t, cl, "t", true); got != 8 {
		t.Fatalf("ListOffsets latest read_committed = %d after every transaction ended, want 8", got)
	}
	if text := testkit.ScrapeMetrics(t, b.MetricsAddr()); !strings.Contains(text, lag+"0\n") {
		t.Fatalf("/metrics lacks %s0 once no transaction is open", lag)
	}

	if got := consumeValues(t, b, "t", kgo.ReadCommitted(), "c3"); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("read_committed consumer got %v, want the committed records only", got)
	}
	if got := consumeValues(t, b, "t", kgo.ReadUncommitted(), "c3"); !slices.Equal(got, []string{"c1", "c2", "a1", "a2", "c3"}) {
		t.Fatalf("read_uncommitted consumer got %v, want every data record", got)
	}

	// DescribeProducers reports the producer as the log knows it.
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "t", []int32{0, 7}
	dp.Topics = append(dp.Topics, dt)
	dresp, err := dp.RequestWith(ctx(t), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	parts := dresp.Topics[0].Partitions
	if parts[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeProducers of a missing partition: %d", parts[1].ErrorCode)
	}
	if len(parts[0].ActiveProducers) != 1 {
		t.Fatalf("DescribeProducers: %+v", parts[0])
	}
	ap := parts[0].ActiveProducers[0]
	if ap.ProducerID != p.pid || ap.ProducerEpoch != int32(p.epoch) || ap.LastSequence != 4 || ap.CoordinatorEpoch != 3 || ap.CurrentTxnStartOffset != -1 || ap.LastTimestamp <= 0 {
		t.Fatalf("DescribeProducers: %+v", ap)
	}
}

func TestTransactionalProduceAndMarkerRefusals(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	p := newTxnProducer(t, cl, topic)
	// Transactional records need a transactional id.
	if sp := p.produce(nil, p.batch(true, "x"), 1); sp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	// Clients may not write control batches.
	marker, _ := record.EndTxnMarker(true, 0, p.pid, p.epoch, time.Now().UnixMilli())
	id := "tx"
	if sp := p.produce(&id, marker, 1); sp.ErrorCode != kerr.InvalidRecord.Code || sp.ErrorMessage == nil || *sp.ErrorMessage == "" {
		t.Fatalf("a control batch from a client: %v %v", kerr.ErrorForCode(sp.ErrorCode), sp.ErrorMessage)
	}
	p.send("x")
	// A non-transactional batch in the middle of the transaction.
	if sp := p.produce(&id, p.batch(false, "y"), 1); sp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("non-transactional batch inside a transaction: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	p.end(true) // coordinator epoch 3
	if code := writeMarker(t, cl, "t", 0, p.pid, p.epoch, false, 2); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker from an older coordinator: %v", kerr.ErrorForCode(code))
	}
	// A coordinator that fenced the producer ends with a bumped epoch; the
	// old epoch is refused from then on.
	if code := writeMarker(t, cl, "t", 0, p.pid, p.epoch+1, false, 3); code != 0 {
		t.Fatalf("marker bumping the epoch: %v", kerr.ErrorForCode(code))
	}
	if code := writeMarker(t, cl, "t", 0, p.pid, p.epoch, false, 3); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker with an older producer epoch: %v", kerr.ErrorForCode(code))
	}
	if code := writeMarker(t, cl, "t", 3, p.pid, p.epoch, false, 3); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker for a missing partition: %v", kerr.ErrorForCode(code))
	}
}

// Fetch's AbortedTransactions is null for read_uncommitted and for a
// partition in error, and an array (empty when nothing was aborted) for a
// read_committed read, as Kafka answers: clients tell the two apart.
func TestFetchAbortedTransactionsNullUnlessReadCommitted(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetch := func(isolation int8, partition int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := longPoll(topic, 1, 0)
		req.IsolationLevel = isolation
		req.Topics[0].Partitions[0].Partition = partition
		resp, err := req.RequestWith(ctx(t), cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := fetch(0, 0); p.ErrorCode != 0 || p.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted: error %d, aborted transactions %#v, want null", p.ErrorCode, p.AbortedTransactions)
	}
	if p := fetch(1, 0); p.ErrorCode != 0 || p.AbortedTransactions == nil || len(p.AbortedTransactions) != 0 {
		t.Fatalf("read_committed: error %d, aborted transactions %#v, want an empty array", p.ErrorCode, p.AbortedTransactions)
	}
	if p := fetch(1, 5); p.ErrorCode == 0 || p.AbortedTransactions != nil {
		t.Fatalf("read_committed of a partition that does not exist: error %d, aborted transactions %#v, want an error and null", p.ErrorCode, p.AbortedTransactions)
	}
}
