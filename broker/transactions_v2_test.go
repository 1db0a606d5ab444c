package broker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/record"
	"kbroker/internal/testkit"
)

// produceTxn sends one transactional batch of p at sequence seq to
// topic/partition in a Produce of version and returns the partition's code.
func produceTxn(t *testing.T, rc *testkit.RawConn, version int16, p producer, topic string, partition int32, seq int32) int16 {
	t.Helper()
	return produceTxnResponse(t, rc, version, p, topic, partition, seq).ErrorCode
}

// produceTxnResponse sends one transactional batch of one record at
// version and returns the partition's answer.
func produceTxnResponse(t *testing.T, rc *testkit.RawConn, version int16, p producer, topic string, partition int32, seq int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	b := record.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = p.pid, p.epoch, seq, true
	b.Add(time.Now().UnixMilli(), nil, []byte("v"))
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = version, -1, 10_000, &p.id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.ProduceResponse](t, rc, req).Topics[0].Partitions[0]
}

func endTxnV5(t *testing.T, rc *testkit.RawConn, p producer, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 5, p.id, p.pid, p.epoch, commit
	var resp *kmsg.EndTxnResponse
	retrying(t, func() int16 {
		resp = request[*kmsg.EndTxnResponse](t, rc, req)
		return resp.ErrorCode
	})
	return resp
}

func txnOffsetCommit(t *testing.T, rc *testkit.RawConn, version int16, p producer, group, topic string, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = version, p.id, group, p.pid, p.epoch
	req.Generation, req.MemberID = -1, ""
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.TxnOffsetCommitResponse](t, rc, req).Topics[0].Partitions[0].ErrorCode
}

// Transactions V2 (KIP-890 part 2) over TCP: transaction.version 2 is
// finalized in ApiVersions; Produce v12 adds its partition (Produce v11,
// the TV1 path, is refused for a partition not added); EndTxn v5 answers
// the bumped epoch, whose markers the log holds, and a retry one epoch
// behind gets the same answer; the old epoch's produce is refused; an
// empty abort bumps again; TxnOffsetCommit v5 adds the group's offsets
// partition itself while v4 (TV1) is refused without AddOffsetsToTxn
// (KIP-890 part 1).
func TestTransactionsV2OverTCP(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	cl := testkit.Client(t, b.Addr())
	rc := testkit.Dial(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(cl), "t", 2, nil)

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "test", "1"
	avr := request[*kmsg.ApiVersionsResponse](t, rc, av)
	found := false
	for _, f := range avr.FinalizedFeatures {
		if f.Name == "transaction.version" {
			found = f.MaxVersionLevel == 2 && f.MinVersionLevel == 2
		}
	}
	for _, f := range avr.SupportedFeatures {
		if f.Name == "transaction.version" && (f.MinVersion != 0 || f.MaxVersion != 2) {
			found = false
		}
	}
	if !found {
		t.Fatalf("ApiVersions features: supported %+v finalized %+v", avr.SupportedFeatures, avr.FinalizedFeatures)
	}

	findTxnCoordinator(t, rc, "tv2")
	p, code := initProducer(t, rc, "tv2", 5, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	wantCode(t, "Produce v11 to a partition not added", produceTxn(t, rc, 11, p, "t", 1, 0), kerr.InvalidTxnState)
	wantCode(t, "Produce v12 to a partition not added", retrying(t, func() int16 { return produceTxn(t, rc, 12, p, "t", 0, 0) }), nil)
	if d := describeTxn(t, rc, "tv2"); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "t" || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeTransactions after the produce: %+v", d)
	}

	resp := endTxnV5(t, rc, p, true)
	if resp.ErrorCode != 0 || resp.ProducerID != p.pid || resp.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5 commit: %+v, want producer %d epoch %d", resp, p.pid, p.epoch+1)
	}
	waitTxnState(t, rc, "tv2", "CompleteCommit")
	if retry := endTxnV5(t, rc, p, true); retry.ErrorCode != 0 || retry.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5 retried: %+v", retry)
	}
	wantCode(t, "Produce v12 at the old epoch", produceTxn(t, rc, 12, p, "t", 0, 1), kerr.InvalidProducerEpoch)

	// The commit marker carries the bumped epoch.
	consumer := testkit.Client(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx := testkit.Context(t, 10*time.Second)
	var marker *kgo.Record
	for marker == nil && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() {
				marker = r
			}
		})
	}
	if marker == nil || marker.ProducerID != p.pid || marker.ProducerEpoch != p.epoch+1 {
		t.Fatalf("commit marker %+v, want producer %d epoch %d", marker, p.pid, p.epoch+1)
	}

	next := producer{p.id, p.pid, p.epoch + 1}
	abort := endTxnV5(t, rc, next, false)
	if abort.ErrorCode != 0 || abort.ProducerEpoch != next.epoch+1 {
		t.Fatalf("EndTxn v5 abort with nothing open: %+v", abort)
	}
	waitTxnState(t, rc, "tv2", "CompleteAbort")

	// TxnOffsetCommit: v4 (TV1) needs AddOffsetsToTxn first; v5 adds the
	// group's partition itself, and the commit makes the offset visible.
	cur := producer{p.id, p.pid, abort.ProducerEpoch}
	retrying(t, func() int16 {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKeys = 4, []string{"g"}
		return request[*kmsg.FindCoordinatorResponse](t, rc, fc).Coordinators[0].ErrorCode
	})
	offsetsCode := retrying(t, func() int16 { return txnOffsetCommit(t, rc, 4, cur, "g", "t", 7) })
	wantCode(t, "TxnOffsetCommit v4 without AddOffsetsToTxn", offsetsCode, kerr.InvalidTxnState)
	wantCode(t, "TxnOffsetCommit v5", retrying(t, func() int16 { return txnOffsetCommit(t, rc, 5, cur, "g", "t", 7) }), nil)
	if d := describeTxn(t, rc, "tv2"); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "__consumer_offsets" {
		t.Fatalf("DescribeTransactions after TxnOffsetCommit v5: %+v", d)
	}
	if end := endTxnV5(t, rc, cur, true); end.ErrorCode != 0 || end.ProducerEpoch != cur.epoch+1 {
		t.Fatalf("EndTxn v5 commit of the offsets: %+v", end)
	}
	waitTxnState(t, rc, "tv2", "CompleteCommit")
	offsets, err := kadm.NewClient(cl).FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup("t", 0); !ok || o.At != 7 {
		t.Fatalf("committed offset of g: %+v", o)
	}
}

// franz-go's transactional producer takes the TV2 path against kbroker
// (no AddPartitionsToTxn: the AddPartitionsToTxn handler is not needed),
// and its epoch moves by one at every commit and abort; read_committed
// sees the committed records only.
func TestFranzGoTransactionsV2(t *testing.T) {
	b := brokertest.StartWith(t, txnProps(t.TempDir()))
	admin := testkit.Client(t, b.Addr())
	testkit.CreateTopic(t, kadm.NewClient(admin), "t", 3, nil)
	cl := testkit.Client(t, b.Addr(), kgo.TransactionalID("franz-v2"), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testkit.Context(t, 30*time.Second)
	_, last, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	committed := 0
	for i := 0; i < 6; i++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
				t.Fatalf("transaction %d: %v", i, err)
			}
		}
		commit := i%2 == 0
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if commit {
			committed += 3
		}
		_, epoch, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if epoch != last+1 {
			t.Fatalf("transaction %d: epoch %d after epoch %d; TV2 bumps it at every EndTxn", i, epoch, last)
		}
		last = epoch
	}
	consumer := testkit.Client(t, b.Addr(), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := 0
	for seen < committed && ctx.Err() == nil {
		seen += consumer.PollFetches(ctx).NumRecords()
	}
	if seen != committed {
		t.Fatalf("read_committed read %d records, want %d", seen, committed)
	}
	// Nothing more arrives: the aborted records stay hidden.
	short := testkit.Context(t, 500*time.Millisecond)
	if n := consumer.PollFetches(short).NumRecords(); n != 0 {
		t.Fatalf("read_committed read %d more records, from aborted transactions", n)
	}
}

// A TV2 produce to a broker that is not the transaction's coordinator: the
// partition's leader asks the coordinator's broker over the wire. Produce
// v11 (TV1) is only verified there (AddPartitionsToTxn v4 with VerifyOnly)
// and refused for a partition not added; Produce v12 has the coordinator
// add it (AddPartitionsToTxn v5 without VerifyOnly), so the transaction
// holds the remote partition, its commit marker reaches it, and
// read_committed reads the record.
func TestTransactionsV2ProduceToAnotherBroker(t *testing.T) {
	brokers := twoTxnBrokers(t, nil)
	adm := kadm.NewClient(testkit.Client(t, brokers[0].Addr()))
	testkit.CreateTopic(t, adm, "remote", 4, nil)
	const id = "tv2-remote"
	coord, other, partition := coordinatorAndOtherLeader(t, adm, brokers, id, "remote")

	rcCoord, rcOther := testkit.Dial(t, coord.Addr()), testkit.Dial(t, other.Addr())
	p, code := initProducer(t, rcCoord, id, 5, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	wantCode(t, "Produce v11 to another broker's partition not added",
		retrying(t, func() int16 { return produceTxn(t, rcOther, 11, p, "remote", partition, 0) }), kerr.InvalidTxnState)
	wantCode(t, "Produce v12 to another broker's partition",
		retrying(t, func() int16 { return produceTxn(t, rcOther, 12, p, "remote", partition, 0) }), nil)
	if d := describeTxn(t, rcCoord, id); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "remote" ||
		len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0] != partition {
		t.Fatalf("DescribeTransactions after the remote produce: %+v", d)
	}
	if resp := endTxnV5(t, rcCoord, p, true); resp.ErrorCode != 0 {
		t.Fatalf("EndTxn v5 commit: %+v", resp)
	}
	waitTxnState(t, rcCoord, id, "CompleteCommit")

	consumer := testkit.Client(t, other.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"remote": {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx := testkit.Context(t, 10*time.Second)
	var read []*kgo.Record
	for len(read) == 0 && ctx.Err() == nil {
		read = append(read, consumer.PollFetches(ctx).Records()...)
	}
	if len(read) != 1 || string(read[0].Value) != "v" {
		t.Fatalf("read_committed read %v from remote-%d, want the one committed record", read, partition)
	}
}

// coordinatorAndOtherLeader finds which of the two brokers coordinates
// transactional id txnID, and a partition of topic that the other leads.
func coordinatorAndOtherLeader(t *testing.T, adm *kadm.Client, brokers []*broker.Broker, txnID, topic string) (coord, other *broker.Broker, partition int32) {
	t.Helper()
	var coordinator int32 = -1
	rc0 := testkit.Dial(t, brokers[0].Addr())
	wantCode(t, "FindCoordinator", retrying(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{txnID}
		c := request[*kmsg.FindCoordinatorResponse](t, rc0, req).Coordinators[0]
		coordinator = c.NodeID
		return c.ErrorCode
	}), nil)
	coord, other = brokers[0], brokers[1]
	if coordinator == 2 {
		coord, other = brokers[1], brokers[0]
	}
	md, err := adm.Metadata(testkit.Context(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	partition = -1
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader != coordinator {
			partition = p.Partition
		}
	}
	if partition < 0 {
		t.Fatalf("every partition of %s is led by the coordinator, broker %d: %+v", topic, coordinator, md.Topics[topic].Partitions)
	}
	return coord, other, partition
}

// twoTxnBrokers starts brokers 1 and 2 for transactions (txnProps) on a
// fresh etcd, with a 2 s session, and the extra properties.
func twoTxnBrokers(t *testing.T, extra map[string]string) []*broker.Broker {
	t.Helper()
	etcd := etcdtest.Start(t)
	var brokers []*broker.Broker
	for id := 1; id <= 2; id++ {
		props := txnProps(t.TempDir())
		props["node.id"], props["metadata.etcd.endpoints"] = strconv.Itoa(id), etcd.Endpoint()
		props["metadata.etcd.session.timeout.ms"], props["metadata.etcd.request.timeout.ms"] = "2000", "1000"
		for k, v := range extra {
			props[k] = v
		}
		brokers = append(brokers, brokertest.StartWith(t, props))
	}
	return brokers
}
