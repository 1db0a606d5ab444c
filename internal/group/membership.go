package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sync serves a SyncGroup. A member's request waits, parked, until the
// leader's assignment arrives.
func (c *Coordinator) Sync(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, time.Duration) {
	if req.Group == "" {
		return syncError(kerr.InvalidGroupID), 0
	}
	resp, parked, errc := call(ctx, c, req.Group, func(s *shard, done func(*kmsg.SyncGroupResponse)) {
		s.sync(req, done)
	})
	if errc != nil {
		return syncError(errc), parked
	}
	return resp, parked
}

func (s *shard) sync(req *kmsg.SyncGroupRequest, reply func(*kmsg.SyncGroupResponse)) {
	g := s.groups[req.Group]
	if g != nil && g.consumer.active() {
		reply(s.classicMemberSync(g, req))
		return
	}
	switch {
	case g == nil || g.state == Empty:
		reply(syncError(kerr.UnknownMemberID))
		return
	case g.state == Dead:
		reply(syncError(kerr.CoordinatorNotAvailable))
		return
	}
	if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
		reply(syncError(e))
		return
	}
	if req.Generation != g.generation {
		reply(syncError(kerr.IllegalGeneration))
		return
	}
	// KIP-559 (v5): the client says which protocol it was assigned with.
	if req.ProtocolType != nil && *req.ProtocolType != g.protocolType ||
		req.Protocol != nil && *req.Protocol != g.protocol {
		reply(syncError(kerr.InconsistentGroupProtocol))
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		reply(syncError(kerr.RebalanceInProgress))
	case Stable:
		s.scheduleHeartbeat(g, m)
		reply(s.syncResponse(g, m))
	case CompletingRebalance:
		if m.sync != nil {
			m.sync(syncError(kerr.RebalanceInProgress)) // superseded by this retry
		}
		m.sync = reply
		s.scheduleHeartbeat(g, m)
		if m.id == g.leader {
			s.assign(g, req.GroupAssignment)
		}
	}
}

// assign stores the leader's assignment (members it left out get an empty
// one), persists the group, and answers every parked SyncGroup.
func (s *shard) assign(g *group, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	given := map[string][]byte{}
	for _, a := range assignments {
		given[a.MemberID] = a.MemberAssignment
	}
	for _, m := range g.members {
		m.assignment = given[m.id]
		if m.assignment == nil {
			m.assignment = []byte{}
		}
	}
	if e := s.write(groupRecord(g)); e != nil {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync(syncError(e))
				m.sync = nil
			}
		}
		s.prepareRebalance(g)
		return
	}
	g.syncTimer.Stop()
	g.transition(Stable, s.now())
	for _, id := range g.order {
		m := g.members[id]
		if m.sync != nil {
			m.sync(s.syncResponse(g, m))
			m.sync = nil
		}
	}
}

func (s *shard) syncResponse(g *group, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = m.assignment
	return resp
}

// Heartbeat serves a Heartbeat. While the shard loads, the answer is NONE:
// the member is told nothing is wrong rather than made to rediscover.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	code, _, errc := call(ctx, c, req.Group, func(s *shard, done func(int16)) { done(s.heartbeat(req)) })
	switch {
	case errc == kerr.CoordinatorLoadInProgress:
	case errc != nil:
		resp.ErrorCode = errc.Code
	default:
		resp.ErrorCode = code
	}
	return resp
}

func (s *shard) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	g := s.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.consumer.active() {
		return s.classicMemberHeartbeat(g, req)
	}
	if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
		return e.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID.Code
	case PreparingRebalance:
		// Still alive, but must rejoin.
		s.scheduleHeartbeat(g, m)
		return kerr.RebalanceInProgress.Code
	}
	s.scheduleHeartbeat(g, m)
	return 0
}

// Leave serves a LeaveGroup (v3+: several members, KIP-345).
func (c *Coordinator) Leave(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	fail := func(e *kerr.Error) *kmsg.LeaveGroupResponse {
		resp.ErrorCode = e.Code
		return resp
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	members, _, errc := call(ctx, c, req.Group, func(s *shard, done func([]kmsg.LeaveGroupResponseMember)) {
		done(s.leave(req.Group, leaving))
	})
	if errc != nil {
		return fail(errc)
	}
	if req.Version < 3 {
		resp.ErrorCode = members[0].ErrorCode
		return resp
	}
	resp.Members = members
	return resp
}

func (s *shard) leave(groupID string, leaving []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	g := s.groups[groupID]
	if g != nil && g.consumer.active() {
		return s.classicMemberLeave(g, leaving)
	}
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(leaving))
	for _, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		rm.ErrorCode = s.leaveOne(g, l)
		out = append(out, rm)
	}
	return out
}

func (s *shard) leaveOne(g *group, l kmsg.LeaveGroupRequestMember) int16 {
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if l.MemberID == "" && l.InstanceID != nil {
		// An admin removing a static member by instance id.
		id, ok := g.statics[*l.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		s.removeMember(g, g.members[id], kerr.UnknownMemberID)
		return 0
	}
	if t, ok := g.pending[l.MemberID]; ok {
		t.Stop()
		delete(g.pending, l.MemberID)
		if g.state == PreparingRebalance {
			s.maybeCompleteJoin(g)
		}
		return 0
	}
	if e := g.validateMember(l.MemberID, l.InstanceID); e != nil {
		return e.Code
	}
	s.removeMember(g, g.members[l.MemberID], kerr.UnknownMemberID)
	return 0
}
