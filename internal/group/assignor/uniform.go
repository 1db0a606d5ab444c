package assignor

import "sort"

// Uniform is Kafka's `uniform` assignor: every member gets as many
// partitions as any other it could share them with (counts differ by at
// most one wherever subscriptions allow a move), and a partition stays
// with the member that has it unless balance needs it elsewhere, so a
// rebalance revokes as little as possible.
type Uniform struct{}

func (Uniform) Name() string { return "uniform" }

func (Uniform) Assign(members []Member, partitions map[TopicID]int32) map[string]Assignment {
	members = sortedMembers(members)
	subscribed := make(map[string]map[TopicID]bool, len(members))
	for _, m := range members {
		s := map[TopicID]bool{}
		for _, t := range m.Topics {
			if _, ok := partitions[t]; ok {
				s[t] = true
			}
		}
		subscribed[m.ID] = s
	}
	owned := make(map[string][]topicPartition, len(members))
	taken := map[topicPartition]bool{}
	// Stickiness: each member keeps what it has that is still valid.
	for _, m := range members {
		owned[m.ID] = nil
		for _, t := range sortedTopics(onlyKeys(m.Current)) {
			for _, p := range m.Current[t] {
				tp := topicPartition{t, p}
				if subscribed[m.ID][t] && p < partitions[t] && !taken[tp] {
					taken[tp] = true
					owned[m.ID] = append(owned[m.ID], tp)
				}
			}
		}
	}
	// Free partitions go to the least loaded member that may take them.
	for _, t := range sortedTopics(partitions) {
		for p := int32(0); p < partitions[t]; p++ {
			tp := topicPartition{t, p}
			if taken[tp] {
				continue
			}
			best := ""
			for _, m := range members {
				if subscribed[m.ID][t] && (best == "" || len(owned[m.ID]) < len(owned[best])) {
					best = m.ID
				}
			}
			if best != "" {
				taken[tp] = true
				owned[best] = append(owned[best], tp)
			}
		}
	}
	// Balance: move one partition at a time from a member with at least
	// two more than another that subscribes to its topic. Each move
	// lowers the sum of squared counts, so the loop ends.
	for moveOne(members, subscribed, owned) {
	}
	return build(owned)
}

func onlyKeys(a Assignment) map[TopicID]int32 {
	out := make(map[TopicID]int32, len(a))
	for t := range a {
		out[t] = 0
	}
	return out
}

func moveOne(members []Member, subscribed map[string]map[TopicID]bool, owned map[string][]topicPartition) bool {
	order := make([]string, len(members))
	for i, m := range members {
		order[i] = m.ID
	}
	sort.SliceStable(order, func(i, j int) bool { return len(owned[order[i]]) > len(owned[order[j]]) })
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
