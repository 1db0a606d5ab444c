package api_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// produceN writes n records to topic-partition with acks=all.
func produceN(t *testing.T, b *broker.Broker, topic string, partition int32, n int) {
	t.Helper()
	cl := testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctx(t), r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// fetchAt is a raw Fetch of topic-0 from offset: its error and log start.
func fetchAt(t *testing.T, cl *kgo.Client, topic string, offset int64) (error, int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	td, err := kadm.NewClient(cl).ListTopics(ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID // kgo sends the highest version: by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset
}

// DeleteRecords moves the log start offset: ListOffsets earliest follows,
// a fetch below it is OFFSET_OUT_OF_RANGE, -1 deletes up to the high
// watermark, an offset past it is OFFSET_OUT_OF_RANGE; the segments below
// the start are deleted (DescribeLogDirs shows the partition shrink), and
// the start survives a restart. Internal and compacted topics refuse.
func TestDeleteRecordsMovesTheLogStartAndSurvivesARestart(t *testing.T) {
	props := config.Properties{"log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0"}
	b := brokertest.StartWith(t, props)
	cl, adm := client(t, b)
	testkit.CreateTopic(t, adm, "dr", 1, map[string]*string{"internal.segment.bytes": str("2000")})
	testkit.CreateTopic(t, adm, "compacted", 1, map[string]*string{"cleanup.policy": str("compact")})
	produceN(t, b, "dr", 0, 100)
	sizeOf := func(adm *kadm.Client) int64 {
		t.Helper()
		dirs, err := adm.DescribeAllLogDirs(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		var size int64 = -1
		for _, d := range dirs {
			if p, ok := d.LookupPartition("dr", 0); ok {
				size = p.Size
			}
		}
		return size
	}
	before := sizeOf(adm)

	res, err := adm.DeleteRecords(ctx(t), kadm.Offsets{"dr": {0: {Topic: "dr", Partition: 0, At: 40}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("DeleteRecords to 40: low watermark %d, %v", r.LowWatermark, r.Err)
	}
	starts, err := adm.ListStartOffsets(ctx(t), "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 40 {
		t.Fatalf("ListOffsets earliest after DeleteRecords: %d, want 40", o.Offset)
	}
	if err, start := fetchAt(t, cl, "dr", 39); !errors.Is(err, kerr.OffsetOutOfRange) || start != 40 {
		t.Fatalf("fetch below the new start: %v (log start %d), want OFFSET_OUT_OF_RANGE", err, start)
	}
	if err, _ := fetchAt(t, cl, "dr", 40); err != nil {
		t.Fatalf("fetch at the new start: %v", err)
	}
	if after := sizeOf(adm); after <= 0 || after >= before {
		t.Fatalf("partition size %d after deleting, %d before: no segment was deleted", after, before)
	}

	// Sent as is (kadm would look the topics up first).
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	refusals := []struct {
		topic  string
		offset int64
		want   *kerr.Error
	}{{"dr", 101, kerr.OffsetOutOfRange}, {"dr", -2, kerr.OffsetOutOfRange}, {"compacted", 0, kerr.PolicyViolation},
		{"__consumer_offsets", 0, kerr.InvalidTopicException}, {"missing", 0, kerr.UnknownTopicOrPartition}}
	for _, c := range refusals {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = c.offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx(t), cl.Broker(1)) // to the broker: the client would shard by leader
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range refusals {
		if got := resp.Topics[i].Partitions[0]; got.ErrorCode != c.want.Code || got.LowWatermark != -1 {
			t.Errorf("DeleteRecords on %s to %d: %v (low watermark %d), want %v", c.topic, c.offset, kerr.ErrorForCode(got.ErrorCode), got.LowWatermark, c.want)
		}
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartWith(t, props)
	cl, adm = client(t, b)
	if starts, err = adm.ListStartOffsets(ctx(t), "dr"); err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 40 {
		t.Fatalf("after a restart the log starts at %d, want 40", o.Offset)
	}
	res, err = adm.DeleteRecords(ctx(t), kadm.Offsets{"dr": {0: {Topic: "dr", Partition: 0, At: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 100 {
		t.Fatalf("DeleteRecords to the high watermark: %d, %v", r.LowWatermark, r.Err)
	}
	produceN(t, b, "dr", 0, 1)
	if err, start := fetchAt(t, cl, "dr", 100); err != nil || start != 100 {
		t.Fatalf("fetch of the record after deleting everything: %v, log start %d", err, start)
	}
}

// DescribeLogDirs lists the broker's log directory by its absolute path,
// with the volume's space and each partition's size; a topic list asks for
// those partitions only.
func TestDescribeLogDirsListsPartitionSizes(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartWith(t, config.Properties{"log.dirs": dir, "listeners": "PLAINTEXT://127.0.0.1:0"})
	_, adm := client(t, b)
	testkit.CreateTopic(t, adm, "a", 2, nil)
	testkit.CreateTopic(t, adm, "b", 1, nil)
	produceN(t, b, "a", 1, 10)
	dirs, err := adm.DescribeBrokerLogDirs(ctx(t), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	d, ok := dirs[abs]
	if !ok || d.Err != nil || len(dirs) != 1 {
		t.Fatalf("log dirs %v, want only %s", dirs, abs)
	}
	if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("volume total %d usable %d", d.TotalBytes, d.UsableBytes)
	}
	sizes := map[string]int64{}
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
		sizes[fmt.Sprint(p.Topic, "-", p.Partition)] = p.Size
		if p.OffsetLag != 0 || p.IsFuture {
			t.Errorf("%s-%d: offset lag %d, future %v", p.Topic, p.Partition, p.OffsetLag, p.IsFuture)
		}
	})
	if len(sizes) != 3 || sizes["a-1"] <= 0 || sizes["a-0"] != 0 || sizes["b-0"] != 0 {
		t.Errorf("partition sizes %v", sizes)
	}
	only, err := adm.DescribeBrokerLogDirs(ctx(t), 1, kadm.TopicsSet{"a": {1: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	only.EachPartition(func(p kadm.DescribedLogDirPartition) {
		n++
		if p.Topic != "a" || p.Partition != 1 {
			t.Errorf("asked for a-1, got %s-%d", p.Topic, p.Partition)
		}
	})
	if n != 1 {
		t.Errorf("asked for a-1 and an unknown topic: %d partitions", n)
	}
}

// describeTopicPartitions sends one DescribeTopicPartitions request.
func describeTopicPartitions(t *testing.T, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// DescribeTopicPartitions pages through every topic with its cursor: each
// page holds at most the limit, pages continue where the last ended (in a
// topic or at the next), and together they list every partition once, in
// order, with replicas, ISR, leader and epoch. Named topics: an unknown
// one is UNKNOWN_TOPIC_OR_PARTITION, a cursor outside the list is
// INVALID_REQUEST.
func TestDescribeTopicPartitionsPagesWithACursor(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("page-%d", i)
		testkit.CreateTopic(t, adm, name, int32(i%3+1), nil)
		for p := range i%3 + 1 {
			want = append(want, fmt.Sprint(name, "/", p))
		}
	}
	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	pages := 0
	for {
		resp := describeTopicPartitions(t, cl, 4, cursor)
		pages++
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("%s: %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, p := range rt.Partitions {
				n++
				got = append(got, fmt.Sprint(*rt.Topic, "/", p.Partition))
				if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) ||
					len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
					t.Errorf("%s-%d: %+v", *rt.Topic, p.Partition, p)
				}
			}
			if rt.AuthorizedOperations <= 0 {
				t.Errorf("%s: authorized operations %d", *rt.Topic, rt.AuthorizedOperations)
			}
		}
		if n > 4 {
			t.Fatalf("a page of limit 4 held %d partitions", n)
		}
		if resp.NextCursor == nil {
			break
		}
		if pages > 10 {
			t.Fatal("the cursor does not end")
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if !slices.Equal(got, want) || pages != (len(want)+3)/4 {
		t.Errorf("%d pages listed %v, want %v", pages, got, want)
	}

	named := describeTopicPartitions(t, cl, 100, nil, "page-2", "nope", "page-0")
	if len(named.Topics) != 3 || *named.Topics[0].Topic != "nope" || named.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		*named.Topics[1].Topic != "page-0" || *named.Topics[2].Topic != "page-2" || len(named.Topics[2].Partitions) != 3 {
		t.Errorf("named topics: %+v", named.Topics)
	}
	bad := describeTopicPartitions(t, cl, 100, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "page-5"}, "page-1")
	if len(bad.Topics) != 1 || bad.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("cursor outside the named topics: %+v", bad.Topics)
	}
}
