package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// classicJoinToConsumerGroup handles a JoinGroup reaching a consumer
// group. An empty one becomes a classic group again, as Kafka converts an
// empty group whatever group.consumer.migration.policy says: its consumer
// records are tombstoned and a fresh classic group recorded, keeping the
// committed offsets. Classic members inside a consumer group with members
// (Kafka's online migration) are not served: such a join gets
// INCONSISTENT_GROUP_PROTOCOL.
func (s *shard) classicJoinToConsumerGroup(g *group) *kerr.Error {
	if g.consumer.active() {
		return kerr.InconsistentGroupProtocol
	}
	records := consumerGroupTombstones(g.id)
	prev := g.consumer
	g.consumer = nil
	g.protocolType, g.generation, g.protocol, g.leader = "", 0, "", ""
	g.transition(Empty, s.now())
	records = append(records, groupRecord(g))
	if e := s.write(records...); e != nil {
		g.consumer, g.protocolType = prev, consumerProtocolType
		return e
	}
	return nil
}
