package badinput

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// TestProduceRefusesBadBatches produces malformed record batches to a real
// topic. Each must be refused with the code Kafka 4 gives, on a connection
// that stays usable, and nothing of it may be stored (the survivor's check
// counts the log's records and end offset exactly).
//
// Where the codes come from, in Kafka's order of checks: KafkaApis runs
// ProduceRequest.validateRecords, which iterates the partition's batches
// (ByteBufferLogInputStream: a size below 14 bytes or a magic above 2 is
// CORRUPT_MESSAGE; a batch longer than the bytes sent is no batch at all)
// and wants exactly one batch of magic 2, else INVALID_RECORD. UnifiedLog
// then checks the CRC (CORRUPT_MESSAGE), LogValidator the count against the
// offset range (INVALID_RECORD), and reading the records finds a count that
// disagrees with the bytes ("Incorrect declared batch size", INVALID_RECORD).
func TestProduceRefusesBadBatches(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	cases := []struct {
		name    string
		records func() []byte
		want    *kerr.Error // nil: any error (Kafka's own answer is not an ApiException)
	}{
		{"corrupt CRC", func() []byte {
			b := batch("a", "b")
			b[len(b)-1] ^= 0xff
			return b
		}, kerr.CorruptMessage},
		{"magic 1 (old message format)", func() []byte {
			b := batch("a")
			b[posMagic] = 1
			return b
		}, kerr.InvalidRecord},
		{"magic 0", func() []byte {
			b := batch("a")
			b[posMagic] = 0
			return b
		}, kerr.InvalidRecord},
		{"two batches in one partition", func() []byte {
			return append(batch("a"), batch("b")...)
		}, kerr.InvalidRecord},
		{"length below the minimum record overhead", func() []byte {
			b := batch("a")
			binary.BigEndian.PutUint32(b[posLength:], 10)
			return b
		}, kerr.CorruptMessage},
		{"count disagrees with the offset range", func() []byte {
			b := batch("a", "b")
			binary.BigEndian.PutUint32(b[posNumRecords:], 3)
			return fixCRC(b)
		}, kerr.InvalidRecord},
		{"zero records", func() []byte {
			return batchOf(nil, 0)
		}, kerr.InvalidRecord},
		{"non-zero base offset", func() []byte {
			b := batch("a")
			binary.BigEndian.PutUint64(b, 42)
			return b
		}, kerr.InvalidRecord},
		{"control batch from a client", func() []byte {
			b := batch("a")
			b[posAttributes+1] |= 0x20
			return fixCRC(b)
		}, kerr.InvalidRecord},
		{"compression codec 7", func() []byte {
			b := batch("a")
			b[posAttributes+1] |= 0x07
			return fixCRC(b)
		}, nil},
		{"gzip codec over records that are not gzip", func() []byte {
			b := batch("a")
			b[posAttributes+1] |= 0x01
			return fixCRC(b)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := produceError(t, c, s.topic, 0, tc.records())
			if tc.want == nil {
				if got == 0 {
					t.Errorf("accepted")
				}
				return
			}
			wantCode(t, tc.name, got, tc.want)
		})
	}
	s.check(t)
}

// TestProduceBatchFramingMatchesKafka pins the codes for batches whose
// length or record count lies about the bytes. Kafka finds these in
// different places than the CRC check, so the code tells a client which
// kind of damage it sent.
func TestProduceBatchFramingMatchesKafka(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	cases := []struct {
		name    string
		records func() []byte
		want    *kerr.Error
		why     string
	}{
		{"length says more than was sent", func() []byte {
			b := batch("a", "b")
			binary.BigEndian.PutUint32(b[posLength:], uint32(len(b)-logOverhead+10))
			return b
		}, kerr.InvalidRecord, "ByteBufferLogInputStream yields no batch from an incomplete one, and validateRecords wants at least one"},
		{"length says less than was sent", func() []byte {
			b := batch("a", "b")
			binary.BigEndian.PutUint32(b[posLength:], uint32(len(b)-logOverhead-4))
			return b
		}, kerr.CorruptMessage, "the 4 trailing bytes are too few for a second batch; the shortened batch fails its CRC"},
		{"magic 3 (from the future)", func() []byte {
			b := batch("a")
			b[posMagic] = 3
			return b
		}, kerr.CorruptMessage, "ByteBufferLogInputStream.nextBatchSize: Invalid magic found in record"},
		{"count above the records held", func() []byte {
			recs := records("a", "b")
			return batchOf(recs, 3)
		}, kerr.InvalidRecord, "DefaultRecordBatch: Incorrect declared batch size, premature EOF reached"},
		{"count below the records held", func() []byte {
			recs := records("a", "b")
			return batchOf(recs, 1)
		}, kerr.InvalidRecord, "DefaultRecordBatch: Incorrect declared batch size, records still remaining in file"},
		{"no bytes at all", func() []byte {
			return []byte{}
		}, kerr.InvalidRecord, "validateRecords: Produce requests must have at least one record batch per partition"},
		{"record length past the batch", func() []byte {
			recs := records("a")
			recs[0] = 0x7e // varint 63: longer than the record
			return batchOf(recs, 1)
		}, kerr.InvalidRecord, "DefaultRecord.readFrom: Invalid record size: expected 63 bytes in record payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := produceError(t, c, s.topic, 0, tc.records())
			if got != tc.want.Code {
				t.Errorf("error code %d (%v), want %d (%s): in Kafka, %s", got, kerr.ErrorForCode(got), tc.want.Code, tc.want.Message, tc.why)
			}
		})
	}
	s.check(t)
}

// TestProduceToMissingTopicCreatesNothing: Produce never auto-creates a
// topic in Kafka 4, whatever auto.create.topics.enable says; it answers
// UNKNOWN_TOPIC_OR_PARTITION.
func TestProduceToMissingTopicCreatesNothing(t *testing.T) {
	for _, autoCreate := range []string{"true", "false"} {
		t.Run("auto.create.topics.enable="+autoCreate, func(t *testing.T) {
			addr := startBroker(t, config.Properties{"auto.create.topics.enable": autoCreate})
			s := seed(t, addr)
			c := testkit.Dial(t, addr)
			wantCode(t, "produce to a missing topic", produceError(t, c, "no-such-topic", 0, batch("a")), kerr.UnknownTopicOrPartition)
			wantCode(t, "produce to partition 1 of a one-partition topic", produceError(t, c, s.topic, 1, batch("a")), kerr.UnknownTopicOrPartition)
			wantCode(t, "produce to partition -1", produceError(t, c, s.topic, -1, batch("a")), kerr.UnknownTopicOrPartition)
			if topicExists(t, addr, "no-such-topic") {
				t.Errorf("producing to a missing topic created it")
			}
			s.check(t)
		})
	}
}

// TestProduceAcks: acks outside {-1, 0, 1} is INVALID_REQUIRED_ACKS for
// every partition, storing nothing. With acks=0 there is no response; when
// such a produce fails Kafka closes the connection so the client notices.
func TestProduceAcks(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)

	t.Run("acks=5", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		resp := c.RoundTrip(produceRequest(9, 5, s.topic, 0, batch("a"))).(*kmsg.ProduceResponse)
		wantCode(t, "acks=5", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)
	})
	t.Run("acks=0 succeeding sends nothing", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		c.Send(produceRequest(9, 0, s.topic, 0, batch("acks-zero")))
		s.values = append(s.values, "acks-zero")
		// The next response on the connection is the next request's.
		resp := c.RoundTrip(metadataRequest(12, false, s.topic)).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("metadata after an acks=0 produce: %+v", resp.Topics)
		}
	})
	t.Run("acks=0 failing closes the connection", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		c.Send(produceRequest(9, 0, "no-such-topic", 0, batch("a")))
		c.ExpectClosed(closePromptly)
	})
	t.Run("acks=0 with a corrupt batch closes the connection", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		b := batch("a")
		b[len(b)-1] ^= 1
		c.Send(produceRequest(9, 0, s.topic, 0, b))
		c.ExpectClosed(closePromptly)
	})
	s.check(t)
}

// TestFetchErrors: positions outside the log are OFFSET_OUT_OF_RANGE,
// partitions and topics that do not exist UNKNOWN_TOPIC_OR_PARTITION (or
// UNKNOWN_TOPIC_ID when named by id, v13+).
func TestFetchErrors(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	wantCode(t, "fetch beyond the end", fetchError(t, c, s.topic, 0, 1000), kerr.OffsetOutOfRange)
	wantCode(t, "fetch at a negative offset", fetchError(t, c, s.topic, 0, -5), kerr.OffsetOutOfRange)
	wantCode(t, "fetch of partition -1", fetchError(t, c, s.topic, -1, 0), kerr.UnknownTopicOrPartition)
	wantCode(t, "fetch of partition 7", fetchError(t, c, s.topic, 7, 0), kerr.UnknownTopicOrPartition)
	wantCode(t, "fetch of a missing topic", fetchError(t, c, "no-such-topic", 0, 0), kerr.UnknownTopicOrPartition)
	wantCode(t, "fetch at the end", fetchError(t, c, s.topic, 0, int64(len(s.values))), &kerr.Error{Code: 0})

	byID := fetchRequest(13, "", 0, 0)
	byID.Topics[0].TopicID = [16]byte{0xde, 0xad}
	resp := c.RoundTrip(byID).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch by unknown id: %d topics", len(resp.Topics))
	}
	wantCode(t, "fetch v13 of an unknown topic id", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID)
	s.check(t)
}

// TestMetadataInvalidTopicNames: asking for a topic whose name Kafka would
// never accept is INVALID_TOPIC_EXCEPTION, with or without auto-creation,
// and creates nothing.
func TestMetadataInvalidTopicNames(t *testing.T) {
	for _, autoCreate := range []string{"true", "false"} {
		t.Run("auto.create.topics.enable="+autoCreate, func(t *testing.T) {
			addr := startBroker(t, config.Properties{"auto.create.topics.enable": autoCreate})
			s := seed(t, addr)
			c := testkit.Dial(t, addr)
			for _, name := range []string{"bad/name", "..", "a b", strings.Repeat("x", 250)} {
				for _, version := range []int16{4, 9, 12} {
					resp := c.RoundTrip(metadataRequest(version, true, name)).(*kmsg.MetadataResponse)
					if len(resp.Topics) != 1 {
						t.Fatalf("metadata v%d for %q: %d topics", version, name, len(resp.Topics))
					}
					wantCode(t, "metadata v"+strconv.Itoa(int(version))+" for "+name[:min(len(name), 20)], resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
				}
				if topicExists(t, addr, name) {
					t.Errorf("asking for %q created it", name)
				}
			}
			s.check(t)
		})
	}
}

// TestMetadataEmptyTopicNameBeforeTopicIDs: before v10 a topic is only a
// name, so an empty one is an invalid name (Topic.validate), not a lookup
// by topic id.
func TestMetadataEmptyTopicNameBeforeTopicIDs(t *testing.T) {
	addr := startBroker(t, config.Properties{"auto.create.topics.enable": "false"})
	c := testkit.Dial(t, addr)
	resp := c.RoundTrip(metadataRequest(9, false, "")).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata v9 for \"\": %d topics", len(resp.Topics))
	}
	wantCode(t, "metadata v9 for an empty name", resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
}

// TestIdleConnectionsAreClosed: with connections.max.idle.ms=300, a silent
// connection is closed soon after 300 ms, and one that keeps talking is not.
func TestIdleConnectionsAreClosed(t *testing.T) {
	addr := startBroker(t, config.Properties{"connections.max.idle.ms": "300"})
	s := seed(t, addr)

	t.Run("silent", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		start := time.Now()
		c.ExpectClosed(3 * time.Second)
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Errorf("closed after %v, before connections.max.idle.ms=300", took)
		}
	})
	t.Run("busy", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		for i := 0; i < 10; i++ {
			c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("silent after a request", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
		c.ExpectClosed(3 * time.Second)
	})
	t.Run("stalled mid-frame", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		c.Write(append(sizeOnly(100), testkit.Header(18, 0, 1, false)[:10]...))
		c.ExpectClosed(3 * time.Second)
	})
	s.check(t)
}
