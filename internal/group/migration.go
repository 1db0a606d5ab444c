package group

import (
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
	"kbroker/internal/group/assignor"
	"kbroker/internal/meta"
)

// Online migration between the classic protocol and KIP-848, as Kafka
// 4.0's GroupMetadataManager does it under group.consumer.migration.policy:
//
//   - upgrade: a ConsumerGroupHeartbeat joining a classic group that has
//     members turns it into a consumer group (policy upgrade or
//     bidirectional); its classic members keep their partitions and live
//     on in the consumer group as members "using the classic protocol";
//   - classic members of a consumer group are served JoinGroup, SyncGroup,
//     Heartbeat and LeaveGroup from the group's target assignment, one
//     member at a time: there is no leader and no join phase, a member's
//     generation is its member epoch, and REBALANCE_IN_PROGRESS tells it
//     to rejoin when it has partitions to give up or to take;
//   - downgrade: when the last member using the consumer protocol leaves
//     or is fenced, the classic members left become a classic group again
//     (policy downgrade or bidirectional), which rebalances at once.
//
// An empty group converts either way whatever the policy (Kafka does the
// same); a classic join to a consumer group with members is served
// whatever the policy too.

// classicProtocol is Kafka's ClassicMemberMetadata: what a member of a
// consumer group that speaks the classic protocol joined with.
type classicProtocol struct {
	sessionTimeout time.Duration
	protocols      []protocol
}

func (p *classicProtocol) protocolName() string {
	if p == nil || len(p.protocols) == 0 {
		return ""
	}
	return p.protocols[0].name
}

func (p *classicProtocol) supports(name string) bool {
	return slices.ContainsFunc(p.protocols, func(q protocol) bool { return q.name == name })
}

// subscriptionVersion is the ConsumerProtocol version a member's
// subscription is written in: its assignment is answered in the same.
func subscriptionVersion(metadata []byte) int16 {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(metadata); err != nil {
		return 0
	}
	return min(s.Version, 3)
}

func upgradeAllowed(policy string) bool   { return policy == "upgrade" || policy == "bidirectional" }
func downgradeAllowed(policy string) bool { return policy == "downgrade" || policy == "bidirectional" }

// classicJoinToConsumerGroup handles a JoinGroup reaching a consumer
// group. An empty one becomes a classic group again, as Kafka converts an
// empty group whatever group.consumer.migration.policy says: its consumer
// records are tombstoned and a fresh classic group recorded, keeping the
// committed offsets. One with members takes the joining member in as a
// classic member (classicMemberJoin); converted reports which.
func (s *shard) classicJoinToConsumerGroup(g *group) (converted bool, e *kerr.Error) {
	if g.consumer.active() {
		return false, nil
	}
	records := consumerGroupTombstones(g.id)
	prev := g.consumer
	g.consumer = nil
	g.protocolType, g.generation, g.protocol, g.leader = "", 0, "", ""
	g.transition(Empty, s.now())
	records = append(records, groupRecord(g))
	if e := s.write(records...); e != nil {
		g.consumer, g.protocolType = prev, consumerProtocolType
		return false, e
	}
	return true, nil
}

// upgradeClassic converts a classic group with members into a consumer
// group, as Kafka's convertToConsumerGroup: every member keeps the
// partitions of its last assignment (its target, at epoch = the
// generation), its parked join or sync is told REBALANCE_IN_PROGRESS, and
// the classic group's record gives way to the consumer group's records,
// written at once. The caller then adds the joining member, which starts
// a new epoch.
func (s *shard) upgradeClassic(g *group) *kerr.Error {
	cfg := s.cfg.Consumer
	switch {
	case !upgradeAllowed(cfg.MigrationPolicy):
		return kerr.GroupIDNotFound
	case g.protocolType != consumerProtocolType:
		return kerr.GroupIDNotFound
	case len(g.members) > cfg.MaxSize:
		return kerr.GroupIDNotFound
	}
	snap := s.metadata()
	now := s.now()
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch, cg.stateTime = g.generation, g.generation, now
	for _, id := range g.order {
		old := g.members[id]
		name := g.protocol
		if name == "" && len(old.protocols) > 0 {
			name = old.protocols[0].name // no generation completed yet
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(old.metadataFor(name)); err != nil {
			return kerr.GroupIDNotFound // Kafka: the embedded consumer protocol is malformed
		}
		assigned := assignor.Assignment{}
		if len(old.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(old.assignment); err != nil {
				return kerr.GroupIDNotFound
			}
			assigned = assignmentOfNames(snap, a.Topics)
		}
		m := cg.memberOrNew(id)
		m.instanceID, m.rackID, m.clientID, m.clientHost = old.instanceID, sub.Rack, old.clientID, old.clientHost
		m.topicNames = sortedUnique(sub.Topics)
		m.rebalanceTimeout = old.rebalanceTimeout
		m.epoch, m.previousEpoch, m.state = g.generation, g.generation, memberStable
		m.assigned, m.revoking = assigned, assignor.Assignment{}
		m.classic = &classicProtocol{sessionTimeout: old.sessionTimeout, protocols: old.protocols}
		m.sessionTimeout, m.heardAt = old.sessionTimeout, now
		cg.target[id] = cloneAssignment(assigned)
		if m.instanceID != nil {
			cg.statics[*m.instanceID] = id
		}
	}
	cg.subscribedMeta = s.topicsNow(cg, snap)

	records := []coordinator.Record{groupTombstone(g.id)}
	for _, id := range g.order {
		m := cg.members[id]
		records = append(records, memberMetadataRecord(g, m), targetMemberRecord(g, id, cg.target[id]), currentAssignmentRecord(g, m))
	}
	prev := *g
	g.consumer = cg
	records = append(records, subscriptionMetadataRecord(g), consumerGroupRecord(g), targetMetadataRecord(g))
	if e := s.write(records...); e != nil {
		*g = prev
		return e
	}
	// The classic group is gone: its parked requests rejoin the consumer
	// group, its timers stop.
	for _, m := range prev.members {
		m.heartbeat.Stop()
		if m.join != nil {
			m.join(joinError(m.joinVersion, m.id, kerr.RebalanceInProgress))
		}
		if m.sync != nil {
			m.sync(syncError(kerr.RebalanceInProgress))
		}
	}
	prev.joinTimer.Stop()
	prev.syncTimer.Stop()
	for _, t := range prev.pending {
		t.Stop()
	}
	g.members, g.order, g.statics, g.pending = map[string]*member{}, nil, map[string]string{}, map[string]*coordinator.Timer{}
	g.protocolType, g.protocol, g.leader = consumerProtocolType, "", ""
	g.rebalanceOnLoad, g.initialDelay, g.newMemberAdded = false, false, false
	g.transition(Empty, now)
	for _, m := range cg.members {
		s.armSession(g, m)
	}
	s.rt.Logger().Info("upgraded a classic group to a consumer group", "group", g.id, "members", len(cg.members), "epoch", cg.epoch)
	return nil
}

// downgradeIfOnlyClassic is Kafka's convertToClassicGroup, tried when a
// member left or was fenced: if every member left uses the classic
// protocol and the policy and group.max.size allow, the group becomes a
// classic group of those members, each with its target assignment at
// generation = the group epoch, and it rebalances at once so that they
// rejoin it as classic members. It returns the records of the change, or
// nil if the group stays a consumer group.
func (s *shard) downgradeIfOnlyClassic(g *group) []coordinator.Record {
	cg := g.consumer
	if len(cg.members) == 0 || len(cg.members) > s.cfg.MaxSize || !downgradeAllowed(s.cfg.Consumer.MigrationPolicy) {
		return nil
	}
	for _, m := range cg.members {
		if m.classic == nil {
			return nil
		}
	}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var records []coordinator.Record
	for _, id := range ids {
		records = append(records, memberTombstones(g.id, id)...)
	}
	for re := range cg.regexes {
		records = append(records, coordinator.Record{Key: consumerKey(keyConsumerGroupRegex, g.id, re)})
	}
	records = append(records, consumerGroupTombstones(g.id)...)

	names := topicNamesOf(cg)
	g.consumer = nil
	g.members, g.order, g.statics = map[string]*member{}, nil, map[string]string{}
	g.protocolType, g.generation, g.leader = consumerProtocolType, cg.epoch, ""
	for _, id := range ids {
		cm := cg.members[id]
		cm.sessionTimer.Stop()
		cm.rebalanceTimer.Stop()
		cm.joinTimer.Stop()
		g.addMember(&member{
			id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			protocolType: consumerProtocolType, protocols: cm.classic.protocols,
			sessionTimeout: cm.classic.sessionTimeout, rebalanceTimeout: cm.rebalanceTimeout,
		})
	}
	g.protocol = g.selectProtocol()
	for _, id := range ids {
		m := g.members[id]
		m.assignment = encodeAssignment(cg.target[id], names, subscriptionVersion(m.metadataFor(g.protocol)))
	}
	g.transition(Stable, s.now())
	records = append(records, groupRecord(g))
	for _, m := range g.members {
		s.scheduleHeartbeat(g, m)
	}
	s.rt.Logger().Info("downgraded a consumer group to a classic group", "group", g.id, "members", len(g.members), "generation", g.generation)
	// Kafka: a downgrade triggered by a member leaving rebalances.
	s.prepareRebalance(g)
	return records
}

// classicMemberJoin is Kafka's classicGroupJoinToConsumerGroup: a
// JoinGroup of a consumer group with members, answered at once with the
// member's epoch as its generation once the member is reconciled with
// its target from the partitions its subscription says it still owns.
func (s *shard) classicMemberJoin(g *group, jr *joinRequest) {
	cg := g.consumer
	fail := func(e *kerr.Error) { jr.reply(joinError(jr.version, jr.memberID, e)) }
	memberID := jr.memberID
	unknown := memberID == ""
	if unknown {
		memberID = newConsumerMemberID()
	}
	if len(cg.members) >= s.cfg.Consumer.MaxSize && (unknown || cg.members[memberID] == nil) {
		fail(kerr.GroupMaxSizeReached)
		return
	}
	if !cg.supportsClassicProtocols(jr.protocolType, jr.protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if unknown && jr.instanceID == nil && jr.version >= 4 {
		jr.reply(joinError(jr.version, memberID, kerr.MemberIDRequired)) // KIP-394
		return
	}
	var sub kmsg.ConsumerMemberMetadata
	if len(jr.protocols) == 0 || sub.ReadFrom(jr.protocols[0].metadata) != nil {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	sn := snapshotConsumer(g)
	m, joined, records, e := s.classicMemberFor(g, jr, memberID, unknown)
	if e != nil {
		fail(e)
		return
	}
	if sub.Rack != nil {
		m.rackID = sub.Rack
	}
	if jr.rebalanceTimeout > 0 {
		m.rebalanceTimeout = jr.rebalanceTimeout
	}
	topics := sortedUnique(sub.Topics)
	subscriptionChanged := joined || !slices.Equal(topics, m.topicNames)
	m.topicNames, m.serverAssignor = topics, ""
	m.clientID, m.clientHost = jr.from.ID, jr.from.Host
	m.classic = &classicProtocol{sessionTimeout: jr.sessionTimeout, protocols: jr.protocols}
	m.sessionTimeout = jr.sessionTimeout
	records = append(records, memberMetadataRecord(g, m))
	records = append(records, s.refreshTopics(g, subscriptionChanged)...)
	owned := assignmentOfNames(s.metadata(), sub.OwnedPartitions)
	s.reconcile(cg, m, owned, subscriptionChanged)
	m.heardAt = s.now()
	records = append(records, currentAssignmentRecord(g, m))
	if e := s.write(records...); e != nil {
		sn.restore(s, memberID)
		fail(e)
		return
	}
	s.armSession(g, m)
	s.armRebalance(g, m)
	m.joinTimer.Stop()
	m.joinTimer = nil
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = jr.version
	resp.MemberID, resp.Generation = m.id, m.epoch
	pt, p := consumerProtocolType, m.classic.protocolName()
	resp.ProtocolType, resp.Protocol = &pt, &p
	jr.reply(resp)
}

// classicMemberFor finds or makes the member of a classic join, as
// Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember with the
// classic protocol: a static member joining without its member id
// replaces the instance's member (whatever protocol that one speaks),
// taking over its assignment.
func (s *shard) classicMemberFor(g *group, jr *joinRequest, memberID string, unknown bool) (*consumerMember, bool, []coordinator.Record, *kerr.Error) {
	cg := g.consumer
	if jr.instanceID == nil {
		if unknown {
			return cg.memberOrNew(memberID), true, nil, nil
		}
		m := cg.members[memberID]
		if m == nil || m.classic == nil {
			return nil, false, nil, kerr.UnknownMemberID
		}
		return m, false, nil, nil
	}
	instance := *jr.instanceID
	oldID, ok := cg.statics[instance]
	old := cg.members[oldID]
	if !unknown {
		switch {
		case !ok || old == nil:
			return nil, false, nil, kerr.UnknownMemberID
		case oldID != memberID:
			return nil, false, nil, kerr.FencedInstanceID
		case old.classic == nil:
			return nil, false, nil, kerr.UnknownMemberID
		}
		return old, false, nil, nil
	}
	m := cg.memberOrNew(memberID)
	m.instanceID = &instance
	cg.statics[instance] = memberID
	if old == nil {
		return m, true, nil, nil
	}
	// The replacement keeps the old member's partitions and target, at
	// epoch 0: it is reconciled from there on this join.
	m.topicNames, m.regex, m.rebalanceTimeout, m.rackID = old.topicNames, old.regex, old.rebalanceTimeout, old.rackID
	m.assigned = old.assigned
	target := cg.target[oldID]
	cg.dropMember(oldID)
	cg.statics[instance] = memberID
	cg.target[memberID] = target
	records := memberTombstones(g.id, oldID)
	return m, false, append(records, targetMemberRecord(g, memberID, target)), nil
}

// supportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// a classic member may join if it speaks the consumer protocol type and
// one protocol (assignor) that every classic member already in the group
// supports.
func (cg *consumerGroup) supportsClassicProtocols(protocolType string, ps []protocol) bool {
	if protocolType != consumerProtocolType || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range cg.members {
			if m.classic != nil && !m.classic.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names, as Kafka's validateConsumerGroupMember followed by
// throwIfMemberDoesNotUseClassicProtocol.
func (cg *consumerGroup) classicMember(memberID string, instanceID *string) (*consumerMember, *kerr.Error) {
	var m *consumerMember
	if instanceID != nil {
		owner, ok := cg.statics[*instanceID]
		switch {
		case !ok:
			return nil, kerr.UnknownMemberID
		case memberID != "" && owner != memberID:
			return nil, kerr.FencedInstanceID
		}
		m = cg.members[owner]
	} else {
		m = cg.members[memberID]
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// classicMemberSync is Kafka's classicGroupSyncToConsumerGroup: the
// member gets its assignment as it stands, encoded in the ConsumerProtocol
// version of its subscription.
func (s *shard) classicMemberSync(g *group, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	cg := g.consumer
	m, e := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case e != nil:
		return syncError(e)
	case req.Generation != m.epoch:
		return syncError(kerr.IllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType,
		req.Protocol != nil && *req.Protocol != m.classic.protocolName():
		return syncError(kerr.InconsistentGroupProtocol)
	case cg.epoch > m.epoch && m.state != memberUnrevokedPartitions:
		// A new epoch began since the member joined: it must rejoin
		// to catch up (one revoking finishes that first).
		s.armJoinTimeout(g, m)
		return syncError(kerr.RebalanceInProgress)
	}
	s.armSession(g, m)
	resp := kmsg.NewPtrSyncGroupResponse()
	pt, p := consumerProtocolType, m.classic.protocolName()
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = encodeAssignment(m.assigned, topicNamesOf(cg), subscriptionVersion(m.classic.protocols[0].metadata))
	return resp
}

// classicMemberHeartbeat is Kafka's classicGroupHeartbeatToConsumerGroup:
// REBALANCE_IN_PROGRESS makes the member rejoin when the group epoch
// moved past it, when it has partitions to revoke, or when partitions it
// waits for were released.
func (s *shard) classicMemberHeartbeat(g *group, req *kmsg.HeartbeatRequest) int16 {
	cg := g.consumer
	m, e := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case e != nil:
		return e.Code
	case req.Generation != m.epoch:
		return kerr.IllegalGeneration.Code
	}
	s.armSession(g, m)
	if now := s.now(); now.Sub(m.heardAt) >= m.sessionTimeout/heardRefresh {
		// Recorded now and then, so a restarted coordinator knows the
		// member was alive (loadedConsumer).
		m.heardAt = now
		if e := s.write(currentAssignmentRecord(g, m)); e != nil {
			return e.Code
		}
	}
	if m.epoch < cg.epoch || m.state == memberUnrevokedPartitions ||
		m.state == memberUnreleasedPartitions && !s.waitingOnUnreleased(cg, m) {
		s.armJoinTimeout(g, m)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// armJoinTimeout starts, unless running, the timer that fences a classic
// member told to rejoin if no JoinGroup of it comes within its rebalance
// timeout: it would otherwise keep partitions the group has moved on.
func (s *shard) armJoinTimeout(g *group, m *consumerMember) {
	if m.joinTimer != nil {
		return
	}
	d := m.rebalanceTimeout
	if d <= 0 {
		d = m.sessionTimeout
	}
	m.joinTimer = s.rt.After(d, func() {
		m.joinTimer = nil
		if s.groups[g.id] != g || g.consumer == nil || g.consumer.members[m.id] != m {
			return
		}
		s.fence(g, m, "no rejoin within the rebalance timeout")
	})
}

// waitingOnUnreleased reports whether some partition of m's target is
// still owned by another member.
func (s *shard) waitingOnUnreleased(cg *consumerGroup, m *consumerMember) bool {
	held := s.ownedByOthers(cg, m)
	for t, ps := range cg.target[m.id] {
		for _, p := range ps {
			if !contains(m.assigned, t, p) && held[partitionKey{t, p}] {
				return true
			}
		}
	}
	return false
}

// classicMemberLeave removes the classic members a LeaveGroup names from
// a consumer group (a new epoch, or a downgrade if only classic members
// remain: the members named after that leave the classic group).
func (s *shard) classicMemberLeave(g *group, leaving []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(leaving))
	var records []coordinator.Record
	var removed []int // indexes in out of the members records remove
	sn := snapshotConsumer(g)
	// flush appends the removals so far; on failure they are undone and
	// answered with the error.
	flush := func() {
		if e := s.write(records...); e != nil {
			sn.restore(s, "")
			for _, i := range removed {
				out[i].ErrorCode = e.Code
			}
		}
		records, removed = nil, nil
		sn = snapshotConsumer(g)
	}
	for _, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		if g.consumer == nil {
			rm.ErrorCode = s.leaveOne(g, l)
			out = append(out, rm)
			continue
		}
		m, e := g.consumer.classicMember(l.MemberID, l.InstanceID)
		if e != nil {
			rm.ErrorCode = e.Code
			out = append(out, rm)
			continue
		}
		out = append(out, rm)
		removed = append(removed, len(out)-1)
		records = append(records, s.removeConsumerMember(g, m)...)
		if g.consumer == nil {
			flush() // downgraded: the classic group's own writes follow
		}
	}
	if len(records) > 0 {
		flush()
	}
	return out
}

// validateClassicCommit is the commit check of a classic member of a
// consumer group: its generation is its member epoch.
func (cg *consumerGroup) validateClassicCommit(m *consumerMember, generation int32) *kerr.Error {
	if generation != m.epoch {
		return kerr.IllegalGeneration
	}
	return nil
}

// assignmentOfNames maps ConsumerProtocol topic partitions to topic ids;
// topics the metadata does not know are left out.
func assignmentOfNames[T interface {
	kmsg.ConsumerMemberAssignmentTopic | kmsg.ConsumerMemberMetadataOwnedPartition
}](snap *meta.Snapshot, topics []T) assignor.Assignment {
	out := assignor.Assignment{}
	if snap == nil {
		return out
	}
	for _, tp := range topics {
		var name string
		var ps []int32
		switch t := any(tp).(type) {
		case kmsg.ConsumerMemberAssignmentTopic:
			name, ps = t.Topic, t.Partitions
		case kmsg.ConsumerMemberMetadataOwnedPartition:
			name, ps = t.Topic, t.Partitions
		}
		if t := snap.Topic(name); t != nil && len(ps) > 0 {
			id := assignor.TopicID(t.ID)
			out[id] = append(out[id], ps...)
			slices.Sort(out[id])
			out[id] = slices.Compact(out[id])
		}
	}
	return out
}

// topicNamesOf names the topics the group's assignments can hold: its
// subscribed topics.
func topicNamesOf(cg *consumerGroup) map[assignor.TopicID]string {
	out := make(map[assignor.TopicID]string, len(cg.subscribedMeta))
	for id, t := range cg.subscribedMeta {
		out[id] = t.name
	}
	return out
}

// encodeAssignment is a ConsumerProtocol assignment of a, in version.
func encodeAssignment(a assignor.Assignment, names map[assignor.TopicID]string, version int16) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	out.Version = version
	for _, id := range sortedTopicIDs(a) {
		name, ok := names[id]
		if !ok || len(a[id]) == 0 {
			continue
		}
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = name, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return out.AppendTo(nil)
}

func sortedUnique(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
