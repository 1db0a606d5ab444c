package group

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/group/assignor"
	"kbroker/internal/meta"
)

// consumerStates are the states a live consumer group can be in.
var consumerStates = []string{"Empty", "Assigning", "Reconciling", "Stable"}

// ConsumerDescribe answers ConsumerGroupDescribe for one group: an
// unknown group, or a classic one, is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerDescribe(ctx context.Context, groupID string) kmsg.ConsumerGroupDescribeResponseGroup {
	if c.cfg.Consumer.Disabled {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group, d.ErrorCode = groupID, kerr.UnsupportedVersion.Code
		return d
	}
	d, _, errc := call(ctx, c, groupID, func(s *shard, done func(kmsg.ConsumerGroupDescribeResponseGroup)) {
		done(s.consumerDescribe(groupID))
	})
	if errc != nil {
		d = kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group, d.ErrorCode = groupID, errc.Code
	}
	return d
}

func (s *shard) consumerDescribe(groupID string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = groupID
	g := s.groups[groupID]
	if g == nil || g.consumer == nil || g.state == Dead {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + groupID + " not found."
		if g != nil && g.consumer == nil {
			msg = "Group " + groupID + " is not a consumer group."
		}
		d.ErrorMessage = &msg
		return d
	}
	cg := g.consumer
	d.State, d.Epoch, d.AssignmentEpoch = cg.state(), cg.epoch, cg.assignmentEpoch
	d.AssignorName = cg.preferredAssignor(s.cfg.Consumer.Assignors)
	names := s.topicNames(cg)
	for _, id := range sortedMemberIDs(cg) {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topicNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = nilIfEmpty(m.regex)
		dm.Assignment = describedAssignment(m.assigned, names)
		dm.TargetAssignment = describedAssignment(cg.target[m.id], names)
		dm.MemberType = 1 // consumer protocol (v1)
		if m.classic != nil {
			dm.MemberType = 0 // classic protocol
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// topicNames names the topics of the group's assignments: by the
// metadata now, else as its epoch last saw them (a deleted topic).
func (s *shard) topicNames(cg *consumerGroup) func(assignor.TopicID) string {
	snap := s.metadata()
	return func(id assignor.TopicID) string {
		if snap != nil {
			if t := snap.TopicByID(meta.TopicID(id)); t != nil {
				return t.Name
			}
		}
		return cg.subscribedMeta[id].name
	}
}

func sortedMemberIDs(cg *consumerGroup) []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func describedAssignment(a assignor.Assignment, name func(assignor.TopicID) string) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range sortedTopicIDs(a) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, name(id), slices.Clone(a[id])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// describeConsumerAsClassic is a consumer group in DescribeGroups, as
// Kafka 4 gives it: protocol type "consumer", the assignor as protocol,
// and each member's subscription and assignment in the classic
// ConsumerProtocol encoding.
func (s *shard) describeConsumerAsClassic(g *group, d kmsg.DescribeGroupsResponseGroup) kmsg.DescribeGroupsResponseGroup {
	cg := g.consumer
	d.State, d.ProtocolType = cg.state(), consumerProtocolType
	d.Protocol = cg.preferredAssignor(s.cfg.Consumer.Assignors)
	names := s.topicNames(cg)
	for _, id := range sortedMemberIDs(cg) {
		m := cg.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		sub := kmsg.NewConsumerMemberMetadata()
		sub.Version = 3
		sub.Topics = s.memberTopics(cg, m)
		dm.ProtocolMetadata = sub.AppendTo(nil)
		as := kmsg.NewConsumerMemberAssignment()
		as.Version = 3
		for _, tid := range sortedTopicIDs(m.assigned) {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic, t.Partitions = names(tid), slices.Clone(m.assigned[tid])
			as.Topics = append(as.Topics, t)
		}
		dm.MemberAssignment = as.AppendTo(nil)
		d.Members = append(d.Members, dm)
	}
	return d
}

// ValidateFetchMember is Kafka's ConsumerGroup.validateOffsetFetch for an
// OffsetFetch v9+ group that names a member (MemberID, MemberEpoch): in a
// consumer group the member must exist (UNKNOWN_MEMBER_ID) at that epoch
// (STALE_MEMBER_EPOCH if older, FENCED_MEMBER_EPOCH if newer). A fetch
// without a member (epoch < 0), or of a classic group, passes: 0.
func (c *Coordinator) ValidateFetchMember(ctx context.Context, groupID string, memberID *string, memberEpoch int32) int16 {
	if memberEpoch < 0 && (memberID == nil || *memberID == "") {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	code, _, errc := call(ctx, c, groupID, func(s *shard, done func(int16)) {
		g := s.groups[groupID]
		if g == nil || g.consumer == nil {
			done(0)
			return
		}
		m := g.consumer.members[id]
		switch {
		case m == nil:
			done(kerr.UnknownMemberID.Code)
		case memberEpoch > m.epoch:
			done(kerr.FencedMemberEpoch.Code)
		case memberEpoch < m.epoch:
			done(kerr.StaleMemberEpoch.Code)
		default:
			done(0)
		}
	})
	if errc != nil {
		return errc.Code
	}
	return code
}
