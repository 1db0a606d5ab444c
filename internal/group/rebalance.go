package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// completeJoin ends the join phase: members that did not rejoin are
// dropped, a new generation begins, and every parked JoinGroup is answered.
func (s *shard) completeJoin(g *group) {
	if s.groups[g.id] != g || g.state != PreparingRebalance {
		return
	}
	g.joinTimer.Stop()
	g.joinTimer = nil
	g.initialDelay = false
	// Dynamic members that did not rejoin in time are gone; static ones
	// keep their slot (KIP-345) and may come back with their instance id.
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; m.join == nil && m.instanceID == nil {
			m.heartbeat.Stop()
			g.dropMember(id)
		}
	}
	if len(g.members) > 0 && g.awaitingJoin() == 0 {
		// Only absent static members are left: wait another rebalance
		// timeout for them.
		g.joinTimer = s.rt.After(g.rebalanceTimeout(), func() { s.completeJoin(g) })
		return
	}
	if l := g.members[g.leader]; l == nil || l.join == nil {
		for _, id := range g.order {
			if g.members[id].join != nil {
				g.leader = id
				break
			}
		}
	}
	g.generation++
	s.counters.rebalances.Add(1)
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, s.now())
		// The empty generation is persisted, so a failover does not bring
		// back members that left.
		// Nobody is parked to tell of a failed write; the next generation
		// writes the group again.
		_ = s.write(groupRecord(g))
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, s.now())
	s.rt.Logger().Debug("group rebalanced", "group", g.id, "generation", g.generation, "protocol", g.protocol, "members", len(g.members), "leader", g.leader)
	for _, id := range g.order {
		m := g.members[id]
		if m.join == nil {
			continue
		}
		resp := s.joinResponse(g, m, m.joinVersion, id == g.leader, false)
		m.join(resp)
		m.join = nil
		m.isNew = false
		s.scheduleHeartbeat(g, m)
	}
	gen := g.generation
	g.syncTimer = s.rt.After(g.rebalanceTimeout(), func() { s.syncExpired(g, gen) })
	s.persistMembership(g)
}

// syncExpired ends a CompletingRebalance in which the leader's (or some
// member's) SyncGroup never came: members that did not sync are removed
// and the group rebalances.
func (s *shard) syncExpired(g *group, generation int32) {
	if s.groups[g.id] != g || g.state != CompletingRebalance || g.generation != generation {
		return
	}
	for _, id := range append([]string(nil), g.order...) {
		if m := g.members[id]; m.sync == nil {
			m.heartbeat.Stop()
			g.dropMember(id)
		}
	}
	if len(g.members) == 0 {
		g.transition(PreparingRebalance, s.now())
		s.completeJoin(g)
		return
	}
	s.prepareRebalance(g)
	s.persistMembership(g)
}

// removeMember takes m out of the group (session expired, LeaveGroup),
// answering its parked requests with e, and moves the group on.
func (s *shard) removeMember(g *group, m *member, e *kerr.Error) {
	s.rt.Logger().Debug("group member removed", "group", g.id, "member", m.id, "reason", e.Message)
	m.heartbeat.Stop()
	if m.join != nil {
		m.join(joinError(m.joinVersion, m.id, e))
		m.join = nil
	}
	if m.sync != nil {
		m.sync(syncError(e))
		m.sync = nil
	}
	g.dropMember(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		s.prepareRebalance(g)
	case PreparingRebalance:
		s.maybeCompleteJoin(g)
	}
	s.persistMembership(g)
}

func syncError(e *kerr.Error) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = e.Code
	return resp
}
