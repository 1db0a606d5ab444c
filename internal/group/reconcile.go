package group

import (
	"slices"

	"kbroker/internal/group/assignor"
)

// reconcile moves a member towards its target assignment, as Kafka's
// CurrentAssignmentBuilder does. owned is what the member reports it owns
// (nil: not reported, which counts as still owning everything). A
// partition reaches a new owner only once its old owner no longer owns
// it: a member must first report its revoked partitions gone before its
// epoch advances, and a partition still assigned to or being revoked by
// another member is held back ("unreleased") until freed.
func (s *shard) reconcile(cg *consumerGroup, m *consumerMember, owned assignor.Assignment, subscriptionChanged bool) {
	if m.epoch == leaveStaticEpoch {
		return
	}
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch && !subscriptionChanged {
			return
		}
	case memberUnrevokedPartitions:
		if owned == nil || overlaps(owned, m.revoking) {
			return // still owns what it must give up
		}
	}
	s.nextAssignment(cg, m)
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (s *shard) nextAssignment(cg *consumerGroup, m *consumerMember) {
	target := cg.target[m.id]
	heldElsewhere := s.ownedByOthers(cg, m)
	assigned, revoking := assignor.Assignment{}, assignor.Assignment{}
	unreleased := false
	topics := map[assignor.TopicID]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.assigned {
		topics[t] = true
	}
	for t := range topics {
		for _, p := range m.assigned[t] {
			if contains(target, t, p) {
				assigned[t] = append(assigned[t], p)
			} else {
				revoking[t] = append(revoking[t], p)
			}
		}
		for _, p := range target[t] {
			if contains(m.assigned, t, p) {
				continue
			}
			if heldElsewhere[partitionKey{t, p}] {
				unreleased = true
				continue
			}
			assigned[t] = append(assigned[t], p)
		}
		slices.Sort(assigned[t])
	}
	m.previousEpoch = m.epoch
	switch {
	case countPartitions(revoking) > 0:
		// The epoch stays: the member advances only once it has
		// revoked, so it cannot commit for partitions it lost.
		m.state, m.assigned, m.revoking = memberUnrevokedPartitions, dropEmpty(assigned), dropEmpty(revoking)
		return
	case unreleased:
		m.state = memberUnreleasedPartitions
	default:
		m.state = memberStable
	}
	m.epoch, m.assigned, m.revoking = cg.assignmentEpoch, dropEmpty(assigned), assignor.Assignment{}
}

type partitionKey struct {
	topic     assignor.TopicID
	partition int32
}

// ownedByOthers are the partitions assigned to, or being revoked by, the
// members other than m.
func (s *shard) ownedByOthers(cg *consumerGroup, m *consumerMember) map[partitionKey]bool {
	out := map[partitionKey]bool{}
	for _, o := range cg.members {
		if o == m {
			continue
		}
		for _, a := range []assignor.Assignment{o.assigned, o.revoking} {
			for t, ps := range a {
				for _, p := range ps {
					out[partitionKey{t, p}] = true
				}
			}
		}
	}
	return out
}

func dropEmpty(a assignor.Assignment) assignor.Assignment {
	for t, ps := range a {
		if len(ps) == 0 {
			delete(a, t)
		}
	}
	return a
}
