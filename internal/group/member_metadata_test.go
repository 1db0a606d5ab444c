package group

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"kbroker/internal/coordinator"
)

// kafkaMemberMetadataValue lays out a ConsumerGroupMemberMetadataValue v0
// field by field as Kafka's ConsumerGroupMemberMetadataValue.json orders it
// (flexible: compact strings, compact arrays, a tag section), written here
// by hand rather than with the package's encoder, so that the test checks
// the encoder against the schema and not against itself.
func kafkaMemberMetadataValue(instanceID, rackID *string, clientID, clientHost string, topics []string, regex *string, rebalanceTimeoutMs int32, serverAssignor *string) []byte {
	var b []byte
	compact := func(s *string) {
		if s == nil {
			b = binary.AppendUvarint(b, 0)
			return
		}
		b = binary.AppendUvarint(b, uint64(len(*s))+1)
		b = append(b, *s...)
	}
	str := func(s string) { compact(&s) }
	b = binary.BigEndian.AppendUint16(b, 0) // version 0
	compact(instanceID)                     // InstanceId
	compact(rackID)                         // RackId
	str(clientID)                           // ClientId
	str(clientHost)                         // ClientHost
	b = binary.AppendUvarint(b, uint64(len(topics))+1)
	for _, t := range topics { // SubscribedTopicNames
		str(t)
	}
	compact(regex)                                                   // SubscribedTopicRegex
	b = binary.BigEndian.AppendUint32(b, uint32(rebalanceTimeoutMs)) // RebalanceTimeoutMs
	compact(serverAssignor)                                          // ServerAssignor
	return binary.AppendUvarint(b, 0)                                // no tagged fields (ClassicMemberMetadata is null)
}

func strp(s string) *string { return &s }

func TestMemberMetadataRecordIsKafkasLayout(t *testing.T) {
	g := newGroup("g", time.Unix(0, 0))
	m := &consumerMember{
		id: "m", instanceID: strp("i-1"), clientID: "client", clientHost: "/10.0.0.1",
		topicNames: []string{"a", "b"}, serverAssignor: "range", rebalanceTimeout: 45 * time.Second,
	}
	got := memberMetadataRecord(g, m).Value
	want := kafkaMemberMetadataValue(strp("i-1"), nil, "client", "/10.0.0.1", []string{"a", "b"}, nil, 45_000, strp("range"))
	if !bytes.Equal(got, want) {
		t.Fatalf("ConsumerGroupMemberMetadata value\n got %x\nwant %x (Kafka's field order)", got, want)
	}
}

// TestMemberMetadataReplaysKafkasLayout loads a member metadata record laid
// out as a Kafka coordinator writes it, after the group of a real join.
func TestMemberMetadataReplaysKafkasLayout(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	ok(t, h.hb(joinHB("g", "a", "t")))
	value := kafkaMemberMetadataValue(nil, strp("rack-1"), "kafka-client", "/10.1.2.3", []string{"t"}, nil, 45_000, strp("range"))
	var werr error
	h.do(func(s *shard) {
		if e := s.write(coordinator.Record{Key: consumerKey(keyConsumerGroupMemberMetadata, "g", "a"), Value: value}); e != nil {
			werr = e
		}
	})
	if werr != nil {
		t.Fatal(werr)
	}
	h.restart(h.cfg)
	g := h.group("g")
	if g == nil || g.consumer == nil || g.consumer.members["a"] == nil {
		t.Fatal("the member did not come back")
	}
	m := g.consumer.members["a"]
	if m.rebalanceTimeout != 45*time.Second || m.serverAssignor != "range" || m.clientID != "kafka-client" ||
		m.clientHost != "/10.1.2.3" || m.rackID == nil || *m.rackID != "rack-1" || len(m.topicNames) != 1 || m.topicNames[0] != "t" {
		t.Fatalf("replayed member: rebalance timeout %v, assignor %q, client %q %q, rack %v, topics %v",
			m.rebalanceTimeout, m.serverAssignor, m.clientID, m.clientHost, m.rackID, m.topicNames)
	}
}

// TestMemberMetadataOfOlderKbrokerStillLoads: releases before the fix
// wrote ServerAssignor before RebalanceTimeoutMs; such a value must load
// with its fields where they belong, not as a garbage timeout.
func TestMemberMetadataOfOlderKbrokerStillLoads(t *testing.T) {
	for _, assignorName := range []*string{strp("uniform"), nil} {
		var b []byte
		b = binary.AppendUvarint(b, 0)              // InstanceId null
		b = binary.AppendUvarint(b, 0)              // RackId null
		b = append(binary.AppendUvarint(b, 2), 'c') // ClientId "c"
		b = append(binary.AppendUvarint(b, 2), 'h') // ClientHost "h"
		b = binary.AppendUvarint(b, 2)              // one topic
		b = append(binary.AppendUvarint(b, 2), 't') // "t"
		b = binary.AppendUvarint(b, 0)              // regex null
		if assignorName == nil {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = append(binary.AppendUvarint(b, uint64(len(*assignorName))+1), *assignorName...)
		}
		b = binary.BigEndian.AppendUint32(b, 60_000)
		b = binary.AppendUvarint(b, 0) // tags
		md, err := decodeMemberMetadata(b)
		if err != nil {
			t.Fatalf("assignor %v: %v", assignorName, err)
		}
		want := ""
		if assignorName != nil {
			want = *assignorName
		}
		if md.rebalanceTimeout != time.Minute || md.serverAssignor != want || md.clientID != "c" || len(md.topicNames) != 1 {
			t.Fatalf("assignor %v: decoded timeout %v, assignor %q, client %q, topics %v", assignorName, md.rebalanceTimeout, md.serverAssignor, md.clientID, md.topicNames)
		}
	}
}
