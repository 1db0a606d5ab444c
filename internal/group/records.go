package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// Record key versions of `__consumer_offsets`: the key's leading int16 is
// both its schema version and the record type.
const (
	keyOffsetCommitV0  = 0
	keyOffsetCommit    = 1
	keyGroupMetadata   = 2
	offsetValueVersion = 3 // OffsetCommitValue with leader epoch
	// offsetValueWithExpiry is the value version carrying an explicit
	// expire timestamp, written when an OffsetCommit v1-v4 asks for a
	// retention time.
	offsetValueWithExpiry = 1
	groupValueVersion     = 3 // GroupMetadataValue with instance ids
)

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: keyOffsetCommit, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetRecord(group, topic string, partition int32, c committed) coordinator.Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if c.expireTime >= 0 {
		v.Version = offsetValueWithExpiry
		v.ExpireTimestamp = c.expireTime
	}
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = c.offset, c.leaderEpoch, c.metadata, c.commitTime
	return coordinator.Record{Key: offsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, partition int32) coordinator.Record {
	return coordinator.Record{Key: offsetKey(group, topic, partition)}
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: keyGroupMetadata, Group: group}
	return k.AppendTo(nil)
}

func groupTombstone(group string) coordinator.Record {
	return coordinator.Record{Key: groupKey(group)}
}

// groupRecord is the group's generation, protocol, leader and members with
// their assignments, as Kafka persists them after a rebalance.
func groupRecord(g *group) coordinator.Record { return encodeGroup(g, true) }

// unsettledGroupRecord records the members of a group whose rebalance is
// under way (some left, or a new generation awaits its assignment). Kafka
// writes the group only once a rebalance is over, so a coordinator restarted
// mid-rebalance brings back members that left and waits out their sessions;
// a broker that restarts within a session timeout (every few seconds, under
// test) would then never finish a rebalance. The record has no leader,
// which marks it: a group loaded from it rebalances at once.
func unsettledGroupRecord(g *group) coordinator.Record { return encodeGroup(g, false) }

func encodeGroup(g *group, settled bool) coordinator.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" && settled {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	return coordinator.Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// replay applies one record read back from the log.
func (s *shard) replay(r coordinator.Record) error {
	if r.Batch.Transactional || r.Batch.Control {
		return s.replayTransactional(r)
	}
	if len(r.Key) < 2 {
		return fmt.Errorf("group: record key of %d bytes", len(r.Key))
	}
	switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
	case keyOffsetCommitV0, keyOffsetCommit:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("group: offset commit key: %w", err)
		}
		return s.replayOffset(k, r.Value)
	case keyGroupMetadata:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("group: group metadata key: %w", err)
		}
		return s.replayGroup(k.Group, r.Value)
	case keyConsumerGroupMetadata, keyConsumerGroupPartitionMeta, keyConsumerGroupMemberMetadata,
		keyConsumerGroupTargetMetadata, keyConsumerGroupTargetMember, keyConsumerGroupCurrentAssigment,
		keyConsumerGroupRegex:
		return s.replayConsumer(version, r.Key, r.Value)
	default:
		return nil // share-group and streams records: not served
	}
}

func (s *shard) replayOffset(k kmsg.OffsetCommitKey, value []byte) error {
	g := s.groups[k.Group]
	if value == nil {
		if g != nil {
			if ps := g.offsets[k.Topic]; ps != nil {
				delete(ps, k.Partition)
				if len(ps) == 0 {
					delete(g.offsets, k.Topic)
				}
			}
		}
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("group: offset commit value: %w", err)
	}
	if g == nil {
		g = newGroup(k.Group, time.UnixMilli(v.CommitTimestamp))
		s.groups[k.Group] = g
	}
	c := committed{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1}
	if v.Version >= 3 {
		c.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		c.expireTime = v.ExpireTimestamp
	}
	g.setOffset(k.Topic, k.Partition, c)
	return nil
}

func (g *group) setOffset(topic string, partition int32, c committed) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = map[int32]committed{}
		g.offsets[topic] = ps
	}
	ps[partition] = c
}

func (s *shard) replayGroup(id string, value []byte) error {
	if value == nil {
		// The classic group is gone; its offsets stay (they have
		// their own tombstones), and so does the consumer group an
		// upgrade made of it.
		if g := s.groups[id]; g != nil && (len(g.offsets) > 0 || g.consumer != nil) {
			g.members, g.order, g.statics = map[string]*member{}, nil, map[string]string{}
			g.protocol, g.leader, g.state, g.rebalanceOnLoad = "", "", Empty, false
			return nil
		}
		delete(s.groups, id)
		return nil
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("group: group metadata value: %w", err)
	}
	g := s.groups[id]
	if g == nil {
		g = newGroup(id, time.UnixMilli(v.CurrentStateTimestamp))
		s.groups[id] = g
	}
	g.members, g.order, g.statics = map[string]*member{}, nil, map[string]string{}
	g.protocolType, g.generation, g.leader, g.protocol = v.ProtocolType, v.Generation, "", ""
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	for _, vm := range v.Members {
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			protocolType:     v.ProtocolType,
			protocols:        []protocol{{name: g.protocol, metadata: vm.Subscription}},
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout < 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.addMember(m)
	}
	g.rebalanceOnLoad = v.Leader == nil && len(g.members) > 0
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	g.state = Empty
	if len(g.members) > 0 {
		g.state = Stable
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	return nil
}
