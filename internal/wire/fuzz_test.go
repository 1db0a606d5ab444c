package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// everyVersion accepts every API key kmsg knows, from v0 to kmsg's newest
// version, so the fuzzer reaches every body decoder, not only the ones the
// broker registers today.
type everyVersion struct{}

func (everyVersion) Supports(key int16) (min, max int16, ok bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	return 0, r.MaxVersion(), true
}

// frameFor encodes req as a frame without its size prefix: request header
// v1 (v2 with an empty tagged-field section for flexible versions) and body.
func frameFor(req kmsg.Request, correlationID int32, clientID *string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// seedBatch is a valid one-record v2 batch, so Produce seeds carry real
// record bytes for the fuzzer to mutate.
func seedBatch() []byte {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a 1-byte varint length precedes the body
	b := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	return raw
}

// seedRequests are valid requests of several APIs, flexible and not.
func seedRequests() []kmsg.Request {
	topic := "t"
	var out []kmsg.Request

	for _, v := range []int16{0, 3, 4} {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = v
		r.ClientSoftwareName, r.ClientSoftwareVersion = "kbroker-fuzz", "1.0"
		out = append(out, r)
	}
	for _, v := range []int16{1, 9, 12} {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = v
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &topic
		r.Topics = append(r.Topics, mt)
		out = append(out, r)
	}
	for _, v := range []int16{3, 8, 9, 11} {
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.TimeoutMillis = v, -1, 1000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = topic
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = seedBatch()
		pt.Partitions = append(pt.Partitions, pp)
		r.Topics = append(r.Topics, pt)
		out = append(out, r)
	}
	for _, v := range []int16{4, 11, 12, 16} {
		r := kmsg.NewPtrFetchRequest()
		r.Version, r.MaxBytes = v, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = [16]byte{1}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
		out = append(out, r)
	}
	{
		r := kmsg.NewPtrListOffsetsRequest()
		r.Version = 7
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lt.Partitions = append(lt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, lt)
		out = append(out, r)
	}
	{
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version = 7
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 3, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = "cleanup.policy"
		val := "compact"
		c.Value = &val
		ct.Configs = append(ct.Configs, c)
		r.Topics = append(r.Topics, ct)
		out = append(out, r)
	}
	{
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = 4
		out = append(out, r)
	}
	{
		r := kmsg.NewPtrDescribeClusterRequest()
		r.Version = 1
		out = append(out, r)
	}
	return out
}

// FuzzParseRequest feeds arbitrary frames to parseRequest. It must never
// panic (a panic while reading a request is not recovered: it would take the broker
// down), and a request it accepts must survive re-encoding: kmsg writing the
// decoded body and parseRequest reading it back.
func FuzzParseRequest(f *testing.F) {
	cid := "fuzz"
	for i, req := range seedRequests() {
		f.Add(frameFor(req, int32(i), &cid))
		f.Add(frameFor(req, int32(i), nil))
	}
	// Headers alone, and an ApiVersions newer than any we know (KIP-511).
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 7, 0xff, 0xff})
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := parseRequest(frame, everyVersion{})
		if err != nil {
			if req != nil {
				t.Fatalf("parseRequest returned both a request and error %v", err)
			}
			return
		}
		if req.Size != len(frame) {
			t.Fatalf("Size = %d, frame is %d bytes", req.Size, len(frame))
		}
		if req.Body == nil || req.Body.Key() != req.Key {
			t.Fatalf("body %T does not match key %d", req.Body, req.Key)
		}
		if req.Unsupported {
			if req.Key != int16(kmsg.ApiVersions) || req.Body.GetVersion() != 0 {
				t.Fatalf("Unsupported set on %s v%d", kmsg.NameForKey(req.Key), req.Body.GetVersion())
			}
			return
		}
		if req.Body.GetVersion() != req.Version {
			t.Fatalf("body decoded at v%d, header says v%d", req.Body.GetVersion(), req.Version)
		}

		clientID := &req.ClientID
		again, err := parseRequest(frameFor(req.Body, req.CorrelationID, clientID), everyVersion{})
		if err != nil {
			t.Fatalf("re-encoded %s v%d does not parse: %v", kmsg.NameForKey(req.Key), req.Version, err)
		}
		if again.Key != req.Key || again.Version != req.Version || again.CorrelationID != req.CorrelationID || again.ClientID != req.ClientID {
			t.Fatalf("header changed by re-encoding: %+v then %+v", req, again)
		}
		// Encoding is a fixed point after one round: what kmsg wrote, it
		// reads back to the same bytes.
		first, second := req.Body.AppendTo(nil), again.Body.AppendTo(nil)
		if !bytes.Equal(first, second) {
			t.Fatalf("%s v%d re-encodes differently:\n%x\n%x", kmsg.NameForKey(req.Key), req.Version, first, second)
		}
	})
}
