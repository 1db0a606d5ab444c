// Package badinput attacks a real kbroker over raw TCP with malformed,
// hostile or misbehaving input and checks three things each time: what the
// attacker sees (Kafka's error code, or the connection closed by the
// broker), that the broker still serves a well-behaved franz-go client, and
// that records stored before the attack are fetched intact after it.
//
// Requests are built with kmsg and framed here (size, header); only then are
// bytes corrupted. Record batches are built with kmsg.RecordBatch and
// kmsg.Record, CRC-32C over attributes..end, then corrupted.
package badinput

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// startBroker runs a broker for one test, with props over test defaults.
func startBroker(t *testing.T, props config.Properties) string {
	t.Helper()
	return brokertest.Start(t, props).Addr()
}

// ---- record batches ------------------------------------------------------

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Byte positions in a v2 record batch.
const (
	posLength     = 8
	posMagic      = 16
	posCRC        = 17
	posAttributes = 21
	posNumRecords = 57
	logOverhead   = 12 // base offset + length
)

// records encodes one v2 record per value, offset deltas 0..n-1.
func records(values ...string) []byte {
	var out []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero Length is one varint byte
		out = r.AppendTo(out)
	}
	return out
}

// batchOf wraps encoded records in a v2 batch declaring n records, with a
// correct length and CRC.
func batchOf(recs []byte, n int32) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: n - 1, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[posLength:], uint32(len(raw)-logOverhead))
	return fixCRC(raw)
}

// batch is a valid batch holding values.
func batch(values ...string) []byte {
	return batchOf(records(values...), int32(len(values)))
}

// fixCRC recomputes the CRC-32C of raw, so that a corruption reaches the
// checks behind the CRC.
func fixCRC(raw []byte) []byte {
	binary.BigEndian.PutUint32(raw[posCRC:], crc32.Checksum(raw[posAttributes:], castagnoli))
	return raw
}

// ---- requests --------------------------------------------------------------

func produceRequest(version, acks int16, topic string, partition int32, recordBytes []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, recordBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceError sends one produce of recordBytes to topic/partition and
// returns the partition's error code.
func produceError(t *testing.T, c *testkit.RawConn, topic string, partition int32, recordBytes []byte) int16 {
	t.Helper()
	resp := c.RoundTrip(produceRequest(9, 1, topic, partition, recordBytes)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func fetchRequest(version int16, topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchError fetches topic/partition at offset and returns the error code.
func fetchError(t *testing.T, c *testkit.RawConn, topic string, partition int32, offset int64) int16 {
	t.Helper()
	resp := c.RoundTrip(fetchRequest(12, topic, partition, offset)).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func metadataRequest(version int16, allowAutoCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = version, allowAutoCreate
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, name := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
	}
	return req
}

// topicExists asks for every topic (null list) and looks for name, so the
// question itself can never create it.
func topicExists(t *testing.T, addr, name string) bool {
	t.Helper()
	c := testkit.Dial(t, addr)
	req := metadataRequest(12, false)
	req.Topics = nil
	resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == name {
			return true
		}
	}
	return false
}

// wantCode fails unless got is the Kafka error want.
func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Errorf("%s: error code %d (%v), want %d (%s)", what, got, kerr.ErrorForCode(got), want.Code, want.Message)
	}
}

// ---- the survivor: what must outlive every attack -------------------------

var topicSeq atomic.Int64

// newClient is a franz-go client for addr, closed when the test ends. Its
// long polls are short so a broker with a small connections.max.idle.ms
// never sees it idle mid-request.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return testkit.Client(t, addr, append([]kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
}

// survivor is a topic holding records written through franz-go before an
// attack.
type survivor struct {
	addr, topic string
	values      []string
}

// seed creates a one-partition topic and stores three records in it through
// franz-go. Call check after the attack.
func seed(t *testing.T, addr string) *survivor {
	t.Helper()
	s := &survivor{addr: addr, topic: fmt.Sprintf("survivor-%d", topicSeq.Add(1))}
	ctx := testkit.Context(t, 10*time.Second)
	cl := newClient(t, addr)
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, s.topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", s.topic, err)
	}
	s.produce(t, cl, "before-1", "before-2", "before-3")
	return s
}

func (s *survivor) produce(t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	ctx := testkit.Context(t, 10*time.Second)
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: s.topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", s.topic, err)
	}
	s.values = append(s.values, values...)
}

// check proves the broker still serves a well-behaved client on a new
// connection, and that the topic holds exactly what was produced through
// franz-go: every record intact and in order, nothing from the attack.
func (s *survivor) check(t *testing.T) {
	t.Helper()
	cl := newClient(t, s.addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		s.topic: {0: kgo.NewOffset().AtStart()},
	}))
	s.produce(t, cl, fmt.Sprintf("after-%d", len(s.values)))

	ctx := testkit.Context(t, 10*time.Second)
	var got []*kgo.Record
	for len(got) < len(s.values) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("fetching %s after the attack: %d of %d records", s.topic, len(got), len(s.values))
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetching %s[%d] after the attack: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	for i, r := range got {
		if i >= len(s.values) || r.Offset != int64(i) || string(r.Value) != s.values[i] {
			t.Fatalf("record %d of %s after the attack: offset %d value %q; want offset %d value %q", i, s.topic, r.Offset, r.Value, i, s.values[min(i, len(s.values)-1)])
		}
	}
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, s.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("listing the end offset of %s: %v", s.topic, err)
	}
	if end, _ := listed.Lookup(s.topic, 0); end.Offset != int64(len(s.values)) {
		t.Fatalf("end offset of %s is %d after the attack, want %d: the attack stored something", s.topic, end.Offset, len(s.values))
	}
}
