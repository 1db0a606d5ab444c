package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"kbroker/internal/coordinator"
	"kbroker/internal/group/assignor"
)

// The KIP-848 record types of `__consumer_offsets`. kmsg v1.15.1 has no
// types for them, so they are encoded here, field for field as Kafka's
// group-coordinator JSON schemas define them: a key is its int16 type
// then the non-flexible key fields; a value is int16 version 0 then the
// flexible (compact, tagged) fields.
const (
	keyConsumerGroupMetadata         = 3
	keyConsumerGroupPartitionMeta    = 4
	keyConsumerGroupMemberMetadata   = 5
	keyConsumerGroupTargetMetadata   = 6
	keyConsumerGroupTargetMember     = 7
	keyConsumerGroupCurrentAssigment = 8
	keyConsumerGroupRegex            = 16
)

// encoder appends Kafka's primitive types.
type encoder struct{ b []byte }

func (e *encoder) int8(v int8)   { e.b = append(e.b, byte(v)) }
func (e *encoder) int16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *encoder) int32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) int64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *encoder) uvarint(v int) { e.b = binary.AppendUvarint(e.b, uint64(v)) }

// str is a non-flexible (int16-length) string, as keys carry.
func (e *encoder) str(s string) { e.int16(int16(len(s))); e.b = append(e.b, s...) }

// cstr and cnstr are compact (nullable) strings, as values carry.
func (e *encoder) cstr(s string) { e.uvarint(len(s) + 1); e.b = append(e.b, s...) }
func (e *encoder) cnstr(s *string) {
	if s == nil {
		e.uvarint(0)
		return
	}
	e.cstr(*s)
}
func (e *encoder) tags() { e.uvarint(0) }

func (e *encoder) assignment(a assignor.Assignment) {
	ids := sortedTopicIDs(a)
	e.uvarint(len(ids) + 1)
	for _, id := range ids {
		e.b = append(e.b, id[:]...)
		e.uvarint(len(a[id]) + 1)
		for _, p := range a[id] {
			e.int32(p)
		}
		e.tags()
	}
}

// decoder reads what encoder writes; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

var errShortRecord = errors.New("group: truncated consumer group record")

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errShortRecord
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}
func (d *decoder) int8() int8 {
	if b := d.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}
func (d *decoder) int16() int16 {
	if b := d.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}
func (d *decoder) int32() int32 {
	if b := d.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}
func (d *decoder) int64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}
func (d *decoder) uvarint() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > uint64(len(d.b))+1 {
		d.err = errShortRecord
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// tag reads a tagged field's number, which (unlike a length) may exceed
// what is left of the record.
func (d *decoder) tag() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShortRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.take(int(d.int16()))) }
func (d *decoder) cnstr() *string {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	s := string(d.take(n - 1))
	return &s
}
func (d *decoder) cstr() string {
	if s := d.cnstr(); s != nil {
		return *s
	}
	return ""
}
func (d *decoder) count() int { return d.uvarint() - 1 }

// tags skips tagged fields.
func (d *decoder) tags() {
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		d.tag()
		d.take(d.uvarint())
	}
}

func (d *decoder) assignment() assignor.Assignment {
	a := assignor.Assignment{}
	for n := d.count(); n > 0 && d.err == nil; n-- {
		var id assignor.TopicID
		copy(id[:], d.take(16))
		var ps []int32
		for k := d.count(); k > 0 && d.err == nil; k-- {
			ps = append(ps, d.int32())
		}
		d.tags()
		a[id] = ps
	}
	return a
}

func consumerKey(recordType int16, groupID string, memberOrRegex ...string) []byte {
	e := encoder{}
	e.int16(recordType)
	e.str(groupID)
	for _, s := range memberOrRegex {
		e.str(s)
	}
	return e.b
}

func valueOf(fill func(e *encoder)) []byte {
	e := encoder{}
	e.int16(0)
	fill(&e)
	e.tags()
	return e.b
}

// consumerGroupRecord is ConsumerGroupMetadata: the group epoch.
func consumerGroupRecord(g *group) coordinator.Record {
	return coordinator.Record{
		Key:   consumerKey(keyConsumerGroupMetadata, g.id),
		Value: valueOf(func(e *encoder) { e.int32(g.consumer.epoch); e.int64(0) }),
	}
}

// subscriptionMetadataRecord is ConsumerGroupPartitionMetadata: the
// subscribed topics as the last group epoch saw them, so that a change in
// them after a restart still bumps the epoch.
func subscriptionMetadataRecord(g *group) coordinator.Record {
	return coordinator.Record{
		Key: consumerKey(keyConsumerGroupPartitionMeta, g.id),
		Value: valueOf(func(e *encoder) {
			topics := g.consumer.subscribedMeta
			ids := sortedTopicIDs(topics)
			e.uvarint(len(ids) + 1)
			for _, id := range ids {
				t := topics[id]
				e.b = append(e.b, id[:]...)
				e.cstr(t.name)
				e.int32(t.partitions)
				e.uvarint(1) // PartitionMetadata: no racks recorded
				e.tags()
			}
		}),
	}
}

// memberMetadataRecord is ConsumerGroupMemberMetadata, its fields in the
// order of Kafka's ConsumerGroupMemberMetadataValue.json (RebalanceTimeoutMs
// before ServerAssignor), so Kafka's tools and a Kafka coordinator read it.
// A classic member carries its ClassicMemberMetadata in tagged field 0, as
// Kafka writes it.
func memberMetadataRecord(g *group, m *consumerMember) coordinator.Record {
	e := encoder{}
	e.int16(0)
	e.cnstr(m.instanceID)
	e.cnstr(m.rackID)
	e.cstr(m.clientID)
	e.cstr(m.clientHost)
	e.uvarint(len(m.topicNames) + 1)
	for _, t := range m.topicNames {
		e.cstr(t)
	}
	e.cnstr(nilIfEmpty(m.regex))
	e.int32(int32(m.rebalanceTimeout.Milliseconds()))
	e.cnstr(nilIfEmpty(m.serverAssignor))
	if m.classic == nil {
		e.tags()
	} else {
		c := encoder{}
		c.int32(int32(m.classic.sessionTimeout.Milliseconds()))
		c.uvarint(len(m.classic.protocols) + 1)
		for _, p := range m.classic.protocols {
			c.cstr(p.name)
			c.uvarint(len(p.metadata) + 1)
			c.b = append(c.b, p.metadata...)
			c.tags()
		}
		c.tags()
		e.uvarint(1)
		e.uvarint(classicMemberMetadataTag)
		e.uvarint(len(c.b))
		e.b = append(e.b, c.b...)
	}
	return coordinator.Record{Key: consumerKey(keyConsumerGroupMemberMetadata, g.id, m.id), Value: e.b}
}

// classicMemberMetadataTag is the tag of ClassicMemberMetadata in a
// ConsumerGroupMemberMetadata value.
const classicMemberMetadataTag = 0

// classicMetadata reads the tagged fields of a member metadata value: its
// ClassicMemberMetadata, nil for a consumer-protocol member.
func (d *decoder) classicMetadata() *classicProtocol {
	var out *classicProtocol
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		tag := d.tag()
		field := d.take(d.uvarint())
		if tag != classicMemberMetadataTag || d.err != nil {
			continue
		}
		c := decoder{b: field}
		out = &classicProtocol{sessionTimeout: msDuration(c.int32())}
		for k := c.count(); k > 0 && c.err == nil; k-- {
			name := c.cstr()
			size := c.uvarint() - 1
			md := slices.Clone(c.take(size))
			c.tags()
			out.protocols = append(out.protocols, protocol{name: name, metadata: md})
		}
		if c.err != nil {
			d.err = c.err
		}
	}
	return out
}

func targetMetadataRecord(g *group) coordinator.Record {
	return coordinator.Record{
		Key:   consumerKey(keyConsumerGroupTargetMetadata, g.id),
		Value: valueOf(func(e *encoder) { e.int32(g.consumer.assignmentEpoch) }),
	}
}

func targetMemberRecord(g *group, memberID string, a assignor.Assignment) coordinator.Record {
	return coordinator.Record{
		Key:   consumerKey(keyConsumerGroupTargetMember, g.id, memberID),
		Value: valueOf(func(e *encoder) { e.assignment(a) }),
	}
}

// heardAtTag is the tagged field of a ConsumerGroupCurrentMemberAssignment
// value in which kbroker keeps when the member was last heard from (Unix
// ms). Kafka's schema has no tagged fields there and its readers skip
// unknown ones; the tag is far above any Kafka would assign next.
const heardAtTag = 10000

func currentAssignmentRecord(g *group, m *consumerMember) coordinator.Record {
	e := encoder{}
	e.int16(0)
	e.int32(m.epoch)
	e.int32(m.previousEpoch)
	e.int8(int8(m.state))
	e.assignment(m.assigned)
	e.assignment(m.revoking)
	if m.heardAt.IsZero() {
		e.tags()
	} else {
		e.uvarint(1)
		e.uvarint(heardAtTag)
		e.uvarint(8)
		e.int64(m.heardAt.UnixMilli())
	}
	return coordinator.Record{Key: consumerKey(keyConsumerGroupCurrentAssigment, g.id, m.id), Value: e.b}
}

// heardAt reads the tagged fields of a current assignment value: the time
// its member was last heard from, zero if not recorded.
func (d *decoder) heardAt() time.Time {
	var at time.Time
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		tag := d.tag()
		size := d.uvarint()
		field := d.take(size)
		if tag == heardAtTag && size == 8 && d.err == nil {
			at = time.UnixMilli(int64(binary.BigEndian.Uint64(field)))
		}
	}
	return at
}

// memberTombstones remove a member in Kafka's order: its current
// assignment, its target, then its metadata.
func memberTombstones(groupID, memberID string) []coordinator.Record {
	return []coordinator.Record{
		{Key: consumerKey(keyConsumerGroupCurrentAssigment, groupID, memberID)},
		{Key: consumerKey(keyConsumerGroupTargetMember, groupID, memberID)},
		{Key: consumerKey(keyConsumerGroupMemberMetadata, groupID, memberID)},
	}
}

// consumerGroupTombstones remove an emptied consumer group (its members
// are gone already): target metadata, subscription metadata, epoch.
func consumerGroupTombstones(groupID string) []coordinator.Record {
	return []coordinator.Record{
		{Key: consumerKey(keyConsumerGroupTargetMetadata, groupID)},
		{Key: consumerKey(keyConsumerGroupPartitionMeta, groupID)},
		{Key: consumerKey(keyConsumerGroupMetadata, groupID)},
	}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// replayConsumer applies one KIP-848 record read back from the log.
func (s *shard) replayConsumer(recordType int16, key, value []byte) error {
	kd := decoder{b: key[2:]}
	groupID := kd.str()
	var sub string
	if recordType == keyConsumerGroupMemberMetadata || recordType == keyConsumerGroupTargetMember ||
		recordType == keyConsumerGroupCurrentAssigment || recordType == keyConsumerGroupRegex {
		sub = kd.str()
	}
	if kd.err != nil {
		return fmt.Errorf("group: consumer group record key type %d: %w", recordType, kd.err)
	}
	g := s.groups[groupID]
	if value == nil {
		if g == nil || g.consumer == nil {
			return nil
		}
		cg := g.consumer
		switch recordType {
		case keyConsumerGroupMetadata:
			// The group record goes last: the group is gone, but its
			// offsets (if any) stay, in an empty classic group.
			g.consumer = nil
			if len(g.offsets) == 0 {
				delete(s.groups, groupID)
			}
		case keyConsumerGroupMemberMetadata:
			cg.dropMember(sub)
		case keyConsumerGroupTargetMember:
			delete(cg.target, sub)
		case keyConsumerGroupCurrentAssigment:
			if m := cg.members[sub]; m != nil {
				m.assigned, m.revoking, m.epoch = assignor.Assignment{}, assignor.Assignment{}, 0
			}
		case keyConsumerGroupRegex:
			delete(cg.regexes, sub)
		}
		return nil
	}
	if g == nil {
		g = newGroup(groupID, s.now())
		s.groups[groupID] = g
	}
	if g.consumer == nil {
		g.consumer = newConsumerGroup()
		g.protocolType = consumerProtocolType
	}
	cg := g.consumer
	d := decoder{b: value}
	if d.int16() < 0 {
		return fmt.Errorf("group: consumer group record type %d: negative version", recordType)
	}
	switch recordType {
	case keyConsumerGroupMetadata:
		cg.epoch = d.int32()
	case keyConsumerGroupPartitionMeta:
		cg.subscribedMeta = map[assignor.TopicID]topicMeta{}
		for n := d.count(); n > 0 && d.err == nil; n-- {
			var id assignor.TopicID
			copy(id[:], d.take(16))
			name := d.cstr()
			parts := d.int32()
			for k := d.count(); k > 0 && d.err == nil; k-- {
				d.int32()
				for r := d.count(); r > 0 && d.err == nil; r-- {
					d.cstr()
				}
				d.tags()
			}
			d.tags()
			cg.subscribedMeta[id] = topicMeta{name: name, partitions: parts}
		}
	case keyConsumerGroupMemberMetadata:
		md, err := decodeMemberMetadata(d.b)
		if err != nil {
			return fmt.Errorf("group: consumer group record type %d: %w", recordType, err)
		}
		m := cg.memberOrNew(sub)
		md.applyTo(m)
		if m.instanceID != nil {
			cg.statics[*m.instanceID] = m.id
		}
	case keyConsumerGroupTargetMetadata:
		cg.assignmentEpoch = d.int32()
	case keyConsumerGroupTargetMember:
		cg.target[sub] = d.assignment()
	case keyConsumerGroupCurrentAssigment:
		m := cg.memberOrNew(sub)
		m.epoch, m.previousEpoch = d.int32(), d.int32()
		m.state = memberState(d.int8())
		m.assigned, m.revoking = d.assignment(), d.assignment()
		m.heardAt = d.heardAt()
	case keyConsumerGroupRegex:
		var topics []string
		for n := d.count(); n > 0 && d.err == nil; n-- {
			topics = append(topics, d.cstr())
		}
		cg.regexes[sub] = topics
	}
	if d.err != nil {
		return fmt.Errorf("group: consumer group record type %d: %w", recordType, d.err)
	}
	return nil
}

// memberMetadata is a decoded ConsumerGroupMemberMetadata value.
type memberMetadata struct {
	instanceID, rackID    *string
	clientID, clientHost  string
	topicNames            []string
	regex, serverAssignor string
	rebalanceTimeout      time.Duration
	classic               *classicProtocol
}

func (md memberMetadata) applyTo(m *consumerMember) {
	m.instanceID, m.rackID = md.instanceID, md.rackID
	m.clientID, m.clientHost = md.clientID, md.clientHost
	m.topicNames = md.topicNames
	m.regex, m.serverAssignor = md.regex, md.serverAssignor
	m.rebalanceTimeout = md.rebalanceTimeout
	m.classic = md.classic
}

// decodeMemberMetadata reads a ConsumerGroupMemberMetadata value (after its
// version) in Kafka's field order. kbroker releases before this one wrote
// ServerAssignor before RebalanceTimeoutMs; such a value does not parse in
// Kafka's order (the assignor's bytes make a huge timeout, and what follows
// is no string of the right length, or the assignor is none Kafka names),
// so it is read again in that order, and a log written by an older kbroker
// still loads.
func decodeMemberMetadata(b []byte) (memberMetadata, error) {
	md, err := decodeMemberMetadataIn(b, false)
	if err == nil && (md.serverAssignor == "" || assignor.Named(md.serverAssignor) != nil) {
		return md, nil
	}
	if old, oldErr := decodeMemberMetadataIn(b, true); oldErr == nil {
		return old, nil
	}
	if err == nil {
		return md, nil // an assignor this broker does not know, in Kafka's order
	}
	return md, err
}

func decodeMemberMetadataIn(b []byte, assignorFirst bool) (memberMetadata, error) {
	d := decoder{b: b}
	var md memberMetadata
	md.instanceID, md.rackID = d.cnstr(), d.cnstr()
	md.clientID, md.clientHost = d.cstr(), d.cstr()
	for n := d.count(); n > 0 && d.err == nil; n-- {
		md.topicNames = append(md.topicNames, d.cstr())
	}
	md.regex = derefOr(d.cnstr())
	if assignorFirst {
		md.serverAssignor = derefOr(d.cnstr())
		md.rebalanceTimeout = msDuration(d.int32())
	} else {
		md.rebalanceTimeout = msDuration(d.int32())
		md.serverAssignor = derefOr(d.cnstr())
	}
	md.classic = d.classicMetadata()
	if d.err == nil && len(d.b) > 0 {
		d.err = errTrailingBytes
	}
	return md, d.err
}

var errTrailingBytes = errors.New("group: bytes after the end of a consumer group record")

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
