package group

import (
	"time"

	"kbroker/internal/coordinator"
)

// scheduleRetention arms the next look for expired offsets.
func (s *shard) scheduleRetention() {
	if s.cfg.RetentionCheck <= 0 || s.cfg.OffsetsRetention <= 0 {
		return
	}
	s.rt.After(s.cfg.RetentionCheck, func() {
		s.expireOffsets()
		s.scheduleRetention()
	})
}

// expireOffsets applies KIP-211: an offset may expire only when nobody is
// using it — every offset of a group without members (counted from when the
// group became empty), or of a topic a live consumer group no longer
// subscribes to (counted from the commit). A group with members whose
// subscriptions the broker cannot read keeps all its offsets. An expire
// time an old OffsetCommit (v1-v4) set overrides the rule. A group left
// empty with no offsets is deleted.
func (s *shard) expireOffsets() {
	now := s.now()
	for _, g := range s.groups {
		if g.consumer.active() {
			continue // a consumer group with members keeps its offsets
		}
		var expired []FetchTopic
		var records []coordinator.Record
		subscribed, known := g.subscribedTopics()
		for topic, ps := range g.offsets {
			if len(g.members) > 0 && (!known || subscribed[topic]) {
				continue
			}
			ft := FetchTopic{Topic: topic}
			for p, c := range ps {
				// An offset a transaction is about to commit never expires.
				if s.offsetExpired(g, c, now) && !s.hasPending(g.id, topic, p) {
					ft.Partitions = append(ft.Partitions, p)
					records = append(records, offsetTombstone(g.id, topic, p))
				}
			}
			if len(ft.Partitions) > 0 {
				expired = append(expired, ft)
			}
		}
		if len(records) == 0 {
			s.dropIfUnused(g, now)
			continue
		}
		dropGroup := g.state == Empty && countOffsets(g) == len(records) && !s.hasPendingGroup(g.id)
		if dropGroup {
			records = append(records, groupTombstone(g.id))
		}
		if s.write(records...) != nil {
			continue // tried again at the next check
		}
		for _, ft := range expired {
			for _, p := range ft.Partitions {
				delete(g.offsets[ft.Topic], p)
			}
			if len(g.offsets[ft.Topic]) == 0 {
				delete(g.offsets, ft.Topic)
			}
		}
		if dropGroup {
			delete(s.groups, g.id)
		}
	}
}

func (s *shard) offsetExpired(g *group, c committed, now time.Time) bool {
	if c.expireTime >= 0 {
		return now.UnixMilli() >= c.expireTime
	}
	base := c.commitTime
	if len(g.members) == 0 && g.protocolType != "" {
		base = g.stateTime.UnixMilli() // when the last member left
	}
	return now.UnixMilli()-base >= s.cfg.OffsetsRetention.Milliseconds()
}

func countOffsets(g *group) int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}

// dropIfUnused deletes an empty group with no offsets once it has been
// empty for the retention time (a group whose members joined but never
// committed).
func (s *shard) dropIfUnused(g *group, now time.Time) {
	if g.state != Empty || g.consumer.active() || len(g.offsets) > 0 || len(g.pending) > 0 || s.hasPendingGroup(g.id) ||
		now.Sub(g.stateTime) < s.cfg.OffsetsRetention {
		return
	}
	if s.write(groupTombstone(g.id)) == nil {
		delete(s.groups, g.id)
	}
}
