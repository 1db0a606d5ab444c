package assignor

import "slices"

// Range is Kafka's `range` assignor: for each topic, the members that
// subscribe to it, in member-id order, get ranges of its partitions, the
// first ones one more when the count does not divide; on a fresh group the
// ranges are contiguous, so two topics with as many partitions and
// subscribers are co-partitioned (the same member gets partition p of
// both). Like Kafka's server-side range assignor it is sticky: a member
// keeps the partitions it has, up to its share, and only the rest move.
type Range struct{}

func (Range) Name() string { return "range" }

func (Range) Assign(members []Member, partitions map[TopicID]int32) map[string]Assignment {
	members = sortedMembers(members)
	owned := make(map[string][]topicPartition, len(members))
	for _, m := range members {
		owned[m.ID] = nil
	}
	for _, t := range sortedTopics(partitions) {
		var subs []Member
		for _, m := range members {
			if slices.Contains(m.Topics, t) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := partitions[t]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		quota := make([]int32, len(subs))
		for i := range subs {
			quota[i] = per
			if int32(i) < extra {
				quota[i]++
			}
		}
		taken := make([]bool, n)
		got := make([][]int32, len(subs))
		// Kept first: what a member has, up to its quota.
		for i, m := range subs {
			for _, p := range m.Current[t] {
				if p < n && !taken[p] && int32(len(got[i])) < quota[i] {
					taken[p] = true
					got[i] = append(got[i], p)
				}
			}
		}
		// The rest in order, each member filled up to its quota.
		next := int32(0)
		for i := range subs {
			for int32(len(got[i])) < quota[i] {
				for taken[next] {
					next++
				}
				taken[next] = true
				got[i] = append(got[i], next)
			}
		}
		for i, m := range subs {
			for _, p := range got[i] {
				owned[m.ID] = append(owned[m.ID], topicPartition{t, p})
			}
		}
	}
	return build(owned)
}
