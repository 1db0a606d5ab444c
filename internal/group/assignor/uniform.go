package assignor

import "slices"

// Uniform is Kafka's `uniform` assignor: every member gets as many
// partitions as any other it could share them with (counts differ by at
// most one wherever subscriptions allow a move), and a partition stays
// with the member that has it unless balance needs it elsewhere, so a
// rebalance revokes as little as possible.
type Uniform struct{}

func (Uniform) Name() string { return "uniform" }

// Members are referred to by their index in ID order throughout, so that
// the balancing loop, which orders members by load before every move,
// compares plain counts rather than looking members up by ID.
func (Uniform) Assign(members []Member, partitions map[TopicID]int32) map[string]Assignment {
	members = sortedMembers(members)
	subscribed := make([]map[TopicID]bool, len(members))
	for i, m := range members {
		s := map[TopicID]bool{}
		for _, t := range m.Topics {
			if _, ok := partitions[t]; ok {
				s[t] = true
			}
		}
		subscribed[i] = s
	}
	owned := make([][]topicPartition, len(members))
	taken := map[topicPartition]bool{}
	// Stickiness: each member keeps what it has that is still valid.
	for i, m := range members {
		for _, t := range sortedTopics(onlyKeys(m.Current)) {
			for _, p := range m.Current[t] {
				tp := topicPartition{t, p}
				if subscribed[i][t] && p < partitions[t] && !taken[tp] {
					taken[tp] = true
					owned[i] = append(owned[i], tp)
				}
			}
		}
	}
	// Free partitions go to the least loaded member that may take them
	// (the first in ID order among equals).
	for _, t := range sortedTopics(partitions) {
		for p := int32(0); p < partitions[t]; p++ {
			tp := topicPartition{t, p}
			if taken[tp] {
				continue
			}
			best := -1
			for i := range members {
				if subscribed[i][t] && (best < 0 || len(owned[i]) < len(owned[best])) {
					best = i
				}
			}
			if best >= 0 {
				taken[tp] = true
				owned[best] = append(owned[best], tp)
			}
		}
	}
	// Balance: move one partition at a time from a member with at least
	// two more than another that subscribes to its topic. Each move
	// lowers the sum of squared counts, so the loop ends.
	order := make([]int, len(members))
	for moveOne(order, subscribed, owned) {
	}
	byID := make(map[string][]topicPartition, len(members))
	for i, m := range members {
		byID[m.ID] = owned[i]
	}
	return build(byID)
}

func onlyKeys(a Assignment) map[TopicID]int32 {
	out := make(map[TopicID]int32, len(a))
	for t := range a {
		out[t] = 0
	}
	return out
}

// moveOne makes one balancing move, if any is left: from the most loaded
// member (the first in ID order among equals) to the least loaded one
// (the last among equals) that subscribes to a topic it may take. order is
// scratch space of one entry per member.
func moveOne(order []int, subscribed []map[TopicID]bool, owned [][]topicPartition) bool {
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(owned[b]) - len(owned[a]) })
	for _, from := range order {
		for i := len(order) - 1; i >= 0; i-- {
			to := order[i]
			if len(owned[to])+1 >= len(owned[from]) {
				break
			}
			// The last-taken partition the receiver may have moves:
			// the ones kept from before come first, so they stay.
			list := owned[from]
			for k := len(list) - 1; k >= 0; k-- {
				if subscribed[to][list[k].topic] {
					owned[to] = append(owned[to], list[k])
					owned[from] = append(list[:k:k], list[k+1:]...)
					return true
				}
			}
		}
	}
	return false
}
