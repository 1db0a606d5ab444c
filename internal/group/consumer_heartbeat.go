package group

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
	"kbroker/internal/group/assignor"
	"kbroker/internal/meta"
)

// ConsumerHeartbeat serves a ConsumerGroupHeartbeat (KIP-848): a join
// (epoch 0), a heartbeat (the member's epoch), or a leave (-1; -2 for a
// static member leaving for now). describable filters the topics a regex
// subscription may resolve to (the principal's TOPIC DESCRIBE); nil
// filters nothing.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, from Client, describable func(topic string) bool) *kmsg.ConsumerGroupHeartbeatResponse {
	if c.cfg.Consumer.Disabled {
		return heartbeatError(req, kerr.UnsupportedVersion, "The new group coordinator does not support the consumer protocol.")
	}
	if describable == nil {
		describable = func(string) bool { return true } // no authorizer: every topic
	}
	if e, msg := c.validateConsumerHeartbeat(req); e != nil {
		return heartbeatError(req, e, msg)
	}
	resp, _, errc := call(ctx, c, req.Group, func(s *shard, done func(*kmsg.ConsumerGroupHeartbeatResponse)) {
		done(s.consumerHeartbeat(req, from, describable))
	})
	if errc != nil {
		return heartbeatError(req, errc, "")
	}
	return resp
}

func heartbeatError(req *kmsg.ConsumerGroupHeartbeatRequest, e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = e.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateConsumerHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid:
// what a request must carry for its epoch.
func (c *Coordinator) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch < leaveStaticEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	case req.MemberID == "" && (req.MemberEpoch != 0 || req.Version >= 1):
		// v0 lets a joining member leave its id to the coordinator.
		return kerr.InvalidRequest, "MemberId can't be empty."
	}
	switch req.MemberEpoch {
	case 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case leaveStaticEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest, "InstanceId can't be null."
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.Consumer.Assignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " + joinNames(c.cfg.Consumer.Assignors) + "."
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression, "SubscribedTopicRegex `" + *req.SubscribedTopicRegex + "` is not a valid regular expression: " + err.Error() + "."
		}
	}
	return nil, ""
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// settings are the session timeout and heartbeat interval of a group: its
// group configs if it has any, else the broker's.
func (s *shard) settings(groupID string) (session, interval time.Duration) {
	session, interval = s.cfg.Consumer.SessionTimeout, s.cfg.Consumer.HeartbeatInterval
	if s.cfg.GroupSettings != nil {
		if gs, gi, ok := s.cfg.GroupSettings(groupID); ok {
			session, interval = gs, gi
		}
	}
	return session, interval
}

func (s *shard) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, from Client, describable func(string) bool) *kmsg.ConsumerGroupHeartbeatResponse {
	session, interval := s.settings(req.Group)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	fail := func(e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := heartbeatError(req, e, msg)
		r.HeartbeatIntervalMillis = resp.HeartbeatIntervalMillis
		return r
	}
	if req.MemberEpoch < 0 {
		return s.consumerLeave(req, resp, fail)
	}
	// What this heartbeat changes in memory is undone if its records
	// cannot be appended (or it fails after a change), as Kafka reverts
	// a failed append. An upgrade writes itself: the snapshot follows it.
	existing := s.groups[req.Group]
	var sn *consumerSnapshot
	if existing != nil && (existing.consumer != nil || len(existing.members) == 0) {
		sn = snapshotConsumer(existing)
	}
	g, records, e, msg := s.consumerGroupFor(req.Group, req.MemberEpoch == 0)
	if e != nil {
		return fail(e, msg)
	}
	if sn == nil && existing != nil {
		sn = snapshotConsumer(g)
	}
	failed := func(e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		if sn != nil {
			sn.restore(s, req.MemberID)
		}
		return fail(e, msg)
	}
	cg := g.consumer
	m, joined, more, e, msg := s.heartbeatMember(g, req)
	if e != nil {
		return failed(e, msg)
	}
	records = append(records, more...)
	owned := ownedOf(req.Topics)
	changed := joined
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = msDuration(req.RebalanceTimeoutMillis)
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if m.clientID != from.ID || m.clientHost != from.Host {
		m.clientID, m.clientHost, changed = from.ID, from.Host, true
	}
	subscriptionChanged := joined
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topicNames) {
			m.topicNames, subscriptionChanged = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, subscriptionChanged = *req.SubscribedTopicRegex, true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor {
		m.serverAssignor, subscriptionChanged = *req.ServerAssignor, true
	}
	m.describable = describable
	if subscriptionChanged || changed {
		records = append(records, memberMetadataRecord(g, m))
	}
	records = append(records, s.refreshTopics(g, subscriptionChanged)...)

	before, beforeEpoch, beforeState := m.assigned, m.epoch, m.state
	beforeRevoking := m.revoking
	s.reconcile(cg, m, owned, subscriptionChanged)
	assignmentChanged := !equalAssignments(before, m.assigned)
	now := s.now()
	heardLongAgo := now.Sub(m.heardAt) >= session/heardRefresh
	if assignmentChanged || beforeEpoch != m.epoch || beforeState != m.state || !equalAssignments(beforeRevoking, m.revoking) || joined || heardLongAgo {
		m.heardAt = now
		records = append(records, currentAssignmentRecord(g, m))
	}
	if e := s.write(records...); e != nil {
		return failed(e, "")
	}
	s.groups[g.id] = g
	m.sessionTimeout, m.heartbeatTime = session, interval
	s.armSession(g, m)
	s.armRebalance(g, m)

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	if isFullHeartbeat(req) || assignmentChanged || joined {
		resp.Assignment = assignmentResponse(m.assigned)
	}
	return resp
}

// isFullHeartbeat is a request with every optional field set: it gets
// the member's assignment whether or not it changed.
func isFullHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	return req.MemberEpoch == 0 || req.RebalanceTimeoutMillis != -1 &&
		(req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
}

func ownedOf(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) assignor.Assignment {
	if topics == nil {
		return nil
	}
	out := assignor.Assignment{}
	for _, t := range topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		out[t.TopicID] = append(out[t.TopicID], ps...)
	}
	return out
}

func assignmentResponse(a assignor.Assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range sortedTopicIDs(a) {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return &out
}

// consumerGroupFor finds the consumer group of a heartbeat, creating it
// for a join, or converting a classic group: an empty one whatever the
// migration policy (as Kafka), one with members as the policy allows
// (upgradeClassic; GROUP_ID_NOT_FOUND when it may not, as Kafka answers).
func (s *shard) consumerGroupFor(id string, join bool) (*group, []coordinator.Record, *kerr.Error, string) {
	g := s.groups[id]
	switch {
	case g == nil && !join:
		return nil, nil, kerr.GroupIDNotFound, "Group " + id + " not found."
	case g == nil:
		g = newGroup(id, s.now())
	case g.state == Dead:
		return nil, nil, kerr.CoordinatorNotAvailable, ""
	case g.consumer != nil:
		return g, nil, nil, ""
	case !join:
		return nil, nil, kerr.GroupIDNotFound, "Group " + id + " is not a consumer group."
	case len(g.members) > 0:
		if e := s.upgradeClassic(g); e != nil {
			return nil, nil, e, "Cannot upgrade classic group " + id + " to a consumer group."
		}
		return g, nil, nil, ""
	}
	g.consumer = newConsumerGroup()
	g.consumer.stateTime = s.now()
	g.protocolType = consumerProtocolType
	return g, []coordinator.Record{consumerGroupRecord(g)}, nil, ""
}

// heartbeatMember finds (or, joining, creates) the member of a heartbeat
// and checks its epoch.
func (s *shard) heartbeatMember(g *group, req *kmsg.ConsumerGroupHeartbeatRequest) (m *consumerMember, joined bool, records []coordinator.Record, e *kerr.Error, msg string) {
	cg := g.consumer
	memberID := req.MemberID
	if req.MemberEpoch == 0 {
		if memberID == "" {
			memberID = newConsumerMemberID()
		}
		if req.InstanceID != nil {
			return s.joinStatic(g, req, memberID)
		}
		if m = cg.members[memberID]; m != nil {
			return rejoinInPlace(m), true, nil, nil, ""
		}
		if len(cg.members) >= s.cfg.Consumer.MaxSize {
			return nil, false, nil, kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of " + itoa(s.cfg.Consumer.MaxSize) + " members."
		}
		return cg.memberOrNew(memberID), true, nil, nil, ""
	}
	m = cg.members[memberID]
	if req.InstanceID != nil {
		owner, ok := cg.statics[*req.InstanceID]
		switch {
		case !ok:
			return nil, false, nil, kerr.UnknownMemberID, "Instance id " + *req.InstanceID + " is unknown."
		case owner != memberID:
			return nil, false, nil, kerr.FencedInstanceID, "Instance id " + *req.InstanceID + " was fenced by member " + owner + "."
		}
	}
	if m == nil {
		return nil, false, nil, kerr.UnknownMemberID, "Member " + memberID + " is not a member of group " + g.id + "."
	}
	if req.MemberEpoch > m.epoch {
		return nil, false, nil, kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (" + itoa(int(req.MemberEpoch)) + ") than the one known by the group coordinator (" + itoa(int(m.epoch)) + "). The member must abandon all its partitions and rejoin."
	}
	if req.MemberEpoch < m.epoch {
		// A lost response: the member may still be at the previous
		// epoch, if what it owns is part of its assignment.
		owned := ownedOf(req.Topics)
		if req.MemberEpoch != m.previousEpoch || owned == nil || !subset(owned, m.assigned) {
			return nil, false, nil, kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (" + itoa(int(req.MemberEpoch)) + ") than the one known by the group coordinator (" + itoa(int(m.epoch)) + "). The member must abandon all its partitions and rejoin."
		}
	}
	return m, false, nil, nil, ""
}

// joinStatic joins a static member: a new instance takes over from one
// that left with epoch -2, inheriting its assignment; an instance whose
// member is still active gets UNRELEASED_INSTANCE_ID.
func (s *shard) joinStatic(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (*consumerMember, bool, []coordinator.Record, *kerr.Error, string) {
	cg := g.consumer
	instance := *req.InstanceID
	oldID, ok := cg.statics[instance]
	if old := cg.members[oldID]; ok && oldID == memberID && old != nil && old.epoch != leaveStaticEpoch {
		// The active member itself rejoining (a fenced member keeps
		// its id, KIP-1082): not a second instance.
		return rejoinInPlace(old), true, nil, nil, ""
	}
	if !ok {
		if cg.members[memberID] == nil && len(cg.members) >= s.cfg.Consumer.MaxSize {
			return nil, false, nil, kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of " + itoa(s.cfg.Consumer.MaxSize) + " members."
		}
		m := cg.memberOrNew(memberID)
		m.instanceID = &instance
		cg.statics[instance] = memberID
		return m, true, nil, nil, ""
	}
	old := cg.members[oldID]
	if old != nil && old.epoch != leaveStaticEpoch {
		return nil, false, nil, kerr.UnreleasedInstanceID, "Static member " + oldID + " with instance id " + instance + " is not released yet."
	}
	var records []coordinator.Record
	m := &consumerMember{id: memberID, instanceID: &instance, assigned: assignor.Assignment{}, revoking: assignor.Assignment{}}
	if old != nil {
		old.sessionTimer.Stop()
		old.rebalanceTimer.Stop()
		// The replacement keeps the assignment and target of the old
		// member, so a restarted static consumer gets its partitions
		// back without a rebalance.
		m.topicNames, m.regex, m.serverAssignor = old.topicNames, old.regex, old.serverAssignor
		m.rebalanceTimeout, m.rackID = old.rebalanceTimeout, old.rackID
		// Reconciled on this heartbeat from what the old member held
		// (as an unreleased member is): its epoch is the target's.
		m.assigned, m.epoch, m.previousEpoch = old.assigned, cg.assignmentEpoch, cg.assignmentEpoch
		m.state = memberUnreleasedPartitions
		target := cg.target[oldID]
		if oldID != memberID {
			cg.dropMember(oldID)
			records = append(records, memberTombstones(g.id, oldID)...)
		}
		cg.target[memberID] = target
		records = append(records, targetMemberRecord(g, memberID, target))
	}
	cg.members[memberID] = m
	cg.statics[instance] = memberID
	// A replacement is not a new member: the group epoch moves only if
	// its subscription differs (seen by the caller).
	return m, old == nil, records, nil, ""
}

// consumerLeave serves epochs -1 (leave) and -2 (a static member leaving
// for now: it keeps its assignment until its session expires, so a quick
// restart gets it back).
func (s *shard) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, fail func(*kerr.Error, string) *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g := s.groups[req.Group]
	if g == nil || g.consumer == nil {
		return fail(kerr.GroupIDNotFound, "Group "+req.Group+" not found.")
	}
	cg := g.consumer
	var m *consumerMember
	if req.InstanceID != nil {
		owner, ok := cg.statics[*req.InstanceID]
		switch {
		case !ok:
			return fail(kerr.UnknownMemberID, "Instance id "+*req.InstanceID+" is unknown.")
		case owner != req.MemberID:
			return fail(kerr.FencedInstanceID, "Instance id "+*req.InstanceID+" was fenced by member "+owner+".")
		}
		m = cg.members[owner]
	} else {
		m = cg.members[req.MemberID]
	}
	if m == nil {
		return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
	}
	sn := snapshotConsumer(g)
	var records []coordinator.Record
	if req.MemberEpoch == leaveStaticEpoch && m.instanceID != nil {
		// The session of a static member that left for now runs from
		// its leave, across restarts too.
		m.epoch, m.state, m.revoking = leaveStaticEpoch, memberStable, assignor.Assignment{}
		m.heardAt = s.now()
		m.rebalanceTimer.Stop()
		records = append(records, currentAssignmentRecord(g, m))
	} else {
		records = s.removeConsumerMember(g, m)
	}
	if e := s.write(records...); e != nil {
		sn.restore(s, m.id)
		return fail(e, "")
	}
	resp.MemberID = &req.MemberID
	resp.MemberEpoch = req.MemberEpoch
	return resp
}

// removeConsumerMember removes a member (left, fenced, expired) and
// starts a new epoch without it; it returns the records to write.
func (s *shard) removeConsumerMember(g *group, m *consumerMember) []coordinator.Record {
	cg := g.consumer
	cg.dropMember(m.id)
	records := memberTombstones(g.id, m.id)
	if down := s.downgradeIfOnlyClassic(g); down != nil {
		return append(records, down...)
	}
	regexRecords, _ := s.resolveRegexes(g, s.metadata())
	records = append(records, regexRecords...)
	cg.subscribedMeta = s.topicsNow(cg, s.metadata())
	records = append(records, s.bumpEpoch(g)...)
	if len(cg.members) == 0 {
		cg.stateTime = s.now()
		g.stateTime = cg.stateTime
	}
	return records
}

func (s *shard) metadata() *meta.Snapshot {
	if s.cfg.Metadata == nil {
		return nil
	}
	return s.cfg.Metadata()
}

// armSession (re)starts a member's session timer: a member not heard
// from within its session timeout is fenced and its partitions reassigned.
func (s *shard) armSession(g *group, m *consumerMember) {
	d := m.sessionTimeout
	if d <= 0 {
		d, _ = s.settings(g.id)
	}
	s.armSessionFor(g, m, d)
}

// armSessionFor (re)starts a member's session timer to fire after d.
func (s *shard) armSessionFor(g *group, m *consumerMember, d time.Duration) {
	m.sessionTimer.Stop()
	m.sessionTimer = s.rt.After(d, func() {
		if s.groups[g.id] != g || g.consumer == nil || g.consumer.members[m.id] != m {
			return
		}
		s.fence(g, m, "session timeout")
	})
}

// armRebalance starts the rebalance timer of a member asked to revoke
// partitions: if it still holds them at that epoch when it fires, the
// member is fenced so its partitions can move.
func (s *shard) armRebalance(g *group, m *consumerMember) {
	if m.state != memberUnrevokedPartitions {
		m.rebalanceTimer.Stop()
		m.rebalanceTimer = nil
		return
	}
	if m.rebalanceTimer != nil {
		return // already running for this revocation
	}
	epoch := m.epoch
	d := m.rebalanceTimeout
	if d <= 0 {
		d, _ = s.settings(g.id)
	}
	m.rebalanceTimer = s.rt.After(d, func() {
		m.rebalanceTimer = nil
		if s.groups[g.id] != g || g.consumer == nil || g.consumer.members[m.id] != m {
			return
		}
		if m.state == memberUnrevokedPartitions && m.epoch == epoch {
			s.fence(g, m, "rebalance timeout")
		}
	})
}

func (s *shard) fence(g *group, m *consumerMember, why string) {
	if e := s.write(s.removeConsumerMember(g, m)...); e != nil {
		s.rt.Logger().Warn("could not record a fenced consumer group member", "group", g.id, "member", m.id, "why", why, "err", e.Message)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// rejoinInPlace resets a member rejoining under its own id (after a
// fencing, or to start over): it owns nothing now, per its empty owned
// list, and is reconciled from there.
func rejoinInPlace(m *consumerMember) *consumerMember {
	m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
	m.assigned, m.revoking = assignor.Assignment{}, assignor.Assignment{}
	m.rebalanceTimer.Stop()
	m.rebalanceTimer = nil
	return m
}
