package group

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is who sent a request, as the group records its members.
type Client struct {
	ID   string // client.id
	Host string
}

// Join serves a JoinGroup. It may wait, parked, until the group's
// rebalance completes; parked is how long it waited.
func (c *Coordinator) Join(ctx context.Context, req *kmsg.JoinGroupRequest, from Client) (resp *kmsg.JoinGroupResponse, parked time.Duration) {
	if req.Group == "" {
		return joinError(req.Version, req.MemberID, kerr.InvalidGroupID), 0
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return joinError(req.Version, req.MemberID, kerr.InvalidSessionTimeout), 0
	}
	resp, parked, errc := call(ctx, c, req.Group, func(s *shard, done func(*kmsg.JoinGroupResponse)) {
		s.join(req, from, done)
	})
	if errc != nil {
		return joinError(req.Version, req.MemberID, errc), parked
	}
	return resp, parked
}

func joinError(version int16, memberID string, e *kerr.Error) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = e.Code
	resp.Generation = -1
	resp.MemberID = memberID
	if version < 7 {
		empty := ""
		resp.Protocol = &empty
	}
	return resp
}

// joinRequest is a JoinGroup as the state machine uses it.
type joinRequest struct {
	version          int16
	memberID         string
	instanceID       *string
	protocolType     string
	protocols        []protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	from             Client
	reply            func(*kmsg.JoinGroupResponse)
}

func (s *shard) join(req *kmsg.JoinGroupRequest, from Client, reply func(*kmsg.JoinGroupResponse)) {
	jr := &joinRequest{
		version: req.Version, memberID: req.MemberID, instanceID: req.InstanceID,
		protocolType: req.ProtocolType, from: from, reply: reply,
		sessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
	}
	if req.Version == 0 { // v0 has no rebalance timeout: the session timeout serves
		jr.rebalanceTimeout = jr.sessionTimeout
	}
	for _, p := range req.Protocols {
		jr.protocols = append(jr.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	fail := func(e *kerr.Error) { reply(joinError(req.Version, req.MemberID, e)) }

	g := s.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			fail(kerr.UnknownMemberID)
			return
		}
		g = newGroup(req.Group, s.now())
		// Recorded at once, as Kafka does, so the group (and its
		// generation count) survives a coordinator restart.
		if e := s.write(groupRecord(g)); e != nil {
			fail(e)
			return
		}
		s.groups[req.Group] = g
	}
	if g.consumer != nil {
		converted, e := s.classicJoinToConsumerGroup(g)
		if e != nil {
			fail(e)
			return
		}
		if !converted {
			s.classicMemberJoin(g, jr)
			return
		}
	}
	if !s.acceptsJoiningMember(g, req.MemberID) {
		fail(kerr.GroupMaxSizeReached)
		return
	}
	if req.MemberID == "" {
		s.joinUnknownMember(g, jr)
	} else {
		s.joinKnownMember(g, jr)
	}
}

// acceptsJoiningMember applies group.max.size: while the group collects
// joins it counts the members waiting in JoinGroup, otherwise its members.
func (s *shard) acceptsJoiningMember(g *group, memberID string) bool {
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		if _, pending := g.pending[memberID]; pending {
			return true
		}
		if m := g.members[memberID]; m != nil && m.join != nil {
			return true
		}
		return g.awaitingJoin() < s.cfg.MaxSize
	}
	return g.members[memberID] != nil || len(g.members) < s.cfg.MaxSize
}

func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// joinRefusal is what any join of g is refused with: a group being
// deleted, or protocols the members cannot agree on.
func joinRefusal(g *group, jr *joinRequest) *kerr.Error {
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case !g.supportsProtocols(jr.protocolType, jr.protocols):
		return kerr.InconsistentGroupProtocol
	}
	return nil
}

func (s *shard) joinUnknownMember(g *group, jr *joinRequest) {
	if e := joinRefusal(g, jr); e != nil {
		jr.reply(joinError(jr.version, jr.memberID, e))
		return
	}
	prefix := jr.from.ID
	if jr.instanceID != nil {
		prefix = *jr.instanceID
	}
	id := newMemberID(prefix)
	switch {
	case jr.instanceID != nil && g.statics[*jr.instanceID] != "":
		s.replaceStaticMember(g, g.members[g.statics[*jr.instanceID]], id, jr)
	case jr.instanceID == nil && jr.version >= 4:
		// KIP-394: hand out the member id and have the client come back
		// with it, so a client that retries a lost JoinGroup cannot leave
		// orphan members behind.
		g.pending[id] = s.rt.After(jr.sessionTimeout, func() { s.pendingExpired(g, id) })
		resp := joinError(jr.version, id, kerr.MemberIDRequired)
		jr.reply(resp)
	default:
		s.addMemberAndRebalance(g, id, jr)
	}
}

func (s *shard) pendingExpired(g *group, id string) {
	if _, ok := g.pending[id]; !ok || s.groups[g.id] != g {
		return
	}
	delete(g.pending, id)
	if g.state == PreparingRebalance {
		s.maybeCompleteJoin(g)
	}
}

func (s *shard) joinKnownMember(g *group, jr *joinRequest) {
	if e := joinRefusal(g, jr); e != nil {
		jr.reply(joinError(jr.version, jr.memberID, e))
		return
	}
	if t, ok := g.pending[jr.memberID]; ok {
		t.Stop()
		delete(g.pending, jr.memberID)
		s.addMemberAndRebalance(g, jr.memberID, jr)
		return
	}
	if e := g.validateMember(jr.memberID, jr.instanceID); e != nil {
		jr.reply(joinError(jr.version, jr.memberID, e))
		return
	}
	m := g.members[jr.memberID]
	switch g.state {
	case PreparingRebalance:
		s.updateMemberAndRebalance(g, m, jr)
	case CompletingRebalance:
		if m.sameProtocols(jr.protocols) {
			// A retried join of this generation: answer it again.
			s.scheduleHeartbeat(g, m)
			jr.reply(s.joinResponse(g, m, jr.version, m.id == g.leader, false))
			return
		}
		s.updateMemberAndRebalance(g, m, jr)
	case Stable:
		if m.id == g.leader || !m.sameProtocols(jr.protocols) {
			// The leader rejoining asks for a new assignment (a changed
			// subscription, a new topic matching its regex); a follower
			// whose metadata changed (a cooperative member that revoked
			// partitions) likewise.
			s.updateMemberAndRebalance(g, m, jr)
			return
		}
		s.scheduleHeartbeat(g, m)
		jr.reply(s.joinResponse(g, m, jr.version, false, false))
	default: // Empty: the member is not part of the group
		jr.reply(joinError(jr.version, jr.memberID, kerr.UnknownMemberID))
	}
}

func (s *shard) addMemberAndRebalance(g *group, id string, jr *joinRequest) {
	m := &member{
		id: id, instanceID: jr.instanceID, clientID: jr.from.ID, clientHost: jr.from.Host,
		protocolType: jr.protocolType, protocols: jr.protocols,
		sessionTimeout: jr.sessionTimeout, rebalanceTimeout: jr.rebalanceTimeout,
		join: jr.reply, joinVersion: jr.version, isNew: true,
	}
	if g.state == PreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	if len(g.members) == 0 {
		g.protocolType = jr.protocolType
	}
	g.addMember(m)
	s.scheduleHeartbeat(g, m)
	s.maybePrepareRebalance(g)
	if g.state == PreparingRebalance {
		s.maybeCompleteJoin(g)
	}
}

func (s *shard) updateMemberAndRebalance(g *group, m *member, jr *joinRequest) {
	m.protocols, m.protocolType = jr.protocols, jr.protocolType
	m.sessionTimeout, m.rebalanceTimeout = jr.sessionTimeout, jr.rebalanceTimeout
	m.clientID, m.clientHost = jr.from.ID, jr.from.Host
	if m.join != nil {
		// A second join of the same member while one is parked: the older
		// one is superseded (its connection is gone or it gave up).
		m.join(joinError(m.joinVersion, m.id, kerr.UnknownMemberID))
	}
	m.join, m.joinVersion = jr.reply, jr.version
	s.scheduleHeartbeat(g, m)
	s.maybePrepareRebalance(g)
	if g.state == PreparingRebalance {
		s.maybeCompleteJoin(g)
	}
}

// replaceStaticMember gives a static member that rejoined without its
// member id (a restarted process) a new id in the same slot: the old
// incarnation is fenced (KIP-345).
func (s *shard) replaceStaticMember(g *group, old *member, newID string, jr *joinRequest) {
	if old.join != nil {
		old.join(joinError(old.joinVersion, old.id, kerr.FencedInstanceID))
		old.join = nil
	}
	if old.sync != nil {
		old.sync(syncError(kerr.FencedInstanceID))
		old.sync = nil
	}
	old.heartbeat.Stop()
	prevProtocols := old.protocols
	wasLeader := g.leader == old.id
	m := *old
	m.id = newID
	m.heartbeat = nil
	for i, id := range g.order {
		if id == old.id {
			g.order[i] = newID
		}
	}
	delete(g.members, old.id)
	g.members[newID] = &m
	g.statics[*m.instanceID] = newID
	if wasLeader {
		g.leader = newID
	}
	nm := &m
	switch {
	case g.state == Stable && g.protocol != "" && sameMetadataFor(prevProtocols, jr.protocols, g.protocol):
		// Nothing the assignment depends on changed: no rebalance. The new
		// id is persisted first, so a failover keeps fencing the old one.
		nm.protocols, nm.clientID, nm.clientHost = jr.protocols, jr.from.ID, jr.from.Host
		nm.sessionTimeout, nm.rebalanceTimeout = jr.sessionTimeout, jr.rebalanceTimeout
		if e := s.write(groupRecord(g)); e != nil {
			// Put the old member back, as Kafka reverts on a failed write.
			delete(g.members, newID)
			for i, id := range g.order {
				if id == newID {
					g.order[i] = old.id
				}
			}
			g.members[old.id] = old
			g.statics[*old.instanceID] = old.id
			if wasLeader {
				g.leader = old.id
			}
			s.scheduleHeartbeat(g, old)
			jr.reply(joinError(jr.version, "", e))
			return
		}
		s.scheduleHeartbeat(g, nm)
		// A static leader coming back gets the members but must not
		// compute a new assignment (KIP-814, v9+).
		jr.reply(s.joinResponse(g, nm, jr.version, wasLeader, wasLeader))
	default:
		s.updateMemberAndRebalance(g, nm, jr)
	}
}

func sameMetadataFor(a, b []protocol, name string) bool {
	find := func(ps []protocol) ([]byte, bool) {
		for _, p := range ps {
			if p.name == name {
				return p.metadata, true
			}
		}
		return nil, false
	}
	ma, oka := find(a)
	mb, okb := find(b)
	return oka && okb && string(ma) == string(mb)
}

// joinResponse is m's answer for the current generation; the leader's
// carries every member's metadata for the selected protocol.
func (s *shard) joinResponse(g *group, m *member, version int16, withMembers, skipAssignment bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	resp.MemberID = m.id
	resp.LeaderID = g.leader
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.SkipAssignment = skipAssignment
	if withMembers {
		for _, id := range g.order {
			o := g.members[id]
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

func (s *shard) maybePrepareRebalance(g *group) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		s.prepareRebalance(g)
	}
}

// prepareRebalance starts collecting joins for the next generation.
func (s *shard) prepareRebalance(g *group) {
	if g.state == CompletingRebalance {
		// The assignment being handed out is void: members parked in
		// SyncGroup must rejoin.
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync(syncError(kerr.RebalanceInProgress))
				m.sync = nil
			}
		}
	}
	g.syncTimer.Stop()
	g.joinTimer.Stop()
	initial := g.state == Empty
	g.transition(PreparingRebalance, s.now())
	if initial {
		// The first rebalance of an empty group waits for more members
		// (group.initial.rebalance.delay.ms), re-arming while they keep
		// coming, but never past the rebalance timeout. As in Kafka it
		// is never completed inline, even with a zero delay: it then
		// completes on the next turn of the loop that no join extends,
		// with the members that have joined, not waiting for those still
		// owing their rejoin after MEMBER_ID_REQUIRED.
		delay := s.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		g.newMemberAdded, g.initialDelay = false, true
		g.joinTimer = s.rt.After(delay, func() { s.initialDelayElapsed(g, delay, remaining) })
		return
	}
	g.joinTimer = s.rt.After(g.rebalanceTimeout(), func() { s.completeJoin(g) })
	// Nobody to wait for (the last member left): complete now.
	s.maybeCompleteJoin(g)
}

func (s *shard) initialDelayElapsed(g *group, delay, remaining time.Duration) {
	if g.newMemberAdded && remaining > 0 {
		g.newMemberAdded = false
		d := min(delay, remaining)
		g.joinTimer = s.rt.After(d, func() { s.initialDelayElapsed(g, delay, remaining-d) })
		return
	}
	s.completeJoin(g)
}

// maybeCompleteJoin ends the join phase as soon as every member has
// rejoined — except during the initial delay, which runs its course.
func (s *shard) maybeCompleteJoin(g *group) {
	if g.state != PreparingRebalance || !g.allJoined() {
		return
	}
	if g.initialDelay {
		return
	}
	g.joinTimer.Stop()
	s.completeJoin(g)
}
