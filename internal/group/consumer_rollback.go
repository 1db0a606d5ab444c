package group

import (
	"maps"

	"kbroker/internal/group/assignor"
)

// consumerSnapshot is a consumer group's in-memory state before a request
// changed it, so that a request whose records could not be appended
// leaves the group as the log has it (Kafka reverts its timeline
// snapshot on a failed append). Members are restored in place: timers
// and parked callbacks compare member pointers.
type consumerSnapshot struct {
	g            *group
	consumer     *consumerGroup
	protocolType string
	// classic are the group's classic fields, which a downgrade
	// replaces.
	classic    group
	saved      consumerGroup
	members    map[string]*consumerMember
	values     map[string]consumerMember
	statics    map[string]string
	target     map[string]assignor.Assignment
	subscribed map[assignor.TopicID]topicMeta
	regexes    map[string][]string
}

func snapshotConsumer(g *group) *consumerSnapshot {
	sn := &consumerSnapshot{g: g, consumer: g.consumer, protocolType: g.protocolType, classic: *g}
	cg := g.consumer
	if cg == nil {
		return sn
	}
	sn.saved = *cg
	sn.members = maps.Clone(cg.members)
	sn.values = make(map[string]consumerMember, len(cg.members))
	for id, m := range cg.members {
		sn.values[id] = *m
	}
	sn.statics, sn.target = maps.Clone(cg.statics), maps.Clone(cg.target)
	sn.subscribed, sn.regexes = maps.Clone(cg.subscribedMeta), maps.Clone(cg.regexes)
	return sn
}

// restore puts the group back as it was at the snapshot. Timers of
// members the request added are stopped; members it removed, and the
// member the request was about (touched, whose rebalance timer a rejoin
// stops), get their timers armed again.
func (sn *consumerSnapshot) restore(s *shard, touched string) {
	g := sn.g
	if g.consumer == nil && sn.consumer != nil {
		// Downgraded by the request: its classic group goes.
		for _, m := range g.members {
			m.heartbeat.Stop()
		}
		g.joinTimer.Stop()
		g.syncTimer.Stop()
		*g = sn.classic
	}
	g.consumer, g.protocolType = sn.consumer, sn.protocolType
	cg := sn.consumer
	if cg == nil {
		return
	}
	for id, m := range cg.members {
		if sn.members[id] != m {
			m.sessionTimer.Stop()
			m.rebalanceTimer.Stop()
		}
	}
	rearm := map[string]bool{touched: true}
	for id := range sn.members {
		if cg.members[id] == nil {
			rearm[id] = true
		}
	}
	*cg = sn.saved
	cg.members, cg.statics, cg.target = sn.members, sn.statics, sn.target
	cg.subscribedMeta, cg.regexes = sn.subscribed, sn.regexes
	for id, m := range cg.members {
		*m = sn.values[id]
		if rearm[id] {
			m.rebalanceTimer = nil
			s.armSession(g, m)
			s.armRebalance(g, m)
		}
	}
}
