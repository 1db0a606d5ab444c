package assignor

// Range is Kafka's `range` assignor: for each topic, the members that
// subscribe to it, in member-id order, get contiguous ranges of its
// partitions, the first ones one more when the count does not divide. Two
// topics with as many partitions and subscribers are co-partitioned: the
// same member gets partition p of both.
type Range struct{}

func (Range) Name() string { return "range" }

func (Range) Assign(members []Member, partitions map[TopicID]int32) map[string]Assignment {
	members = sortedMembers(members)
	owned := make(map[string][]topicPartition, len(members))
	for _, m := range members {
		owned[m.ID] = nil
	}
	for _, t := range sortedTopics(partitions) {
		var subs []string
		for _, m := range members {
			for _, mt := range m.Topics {
				if mt == t {
					subs = append(subs, m.ID)
					break
				}
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := partitions[t]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		next := int32(0)
		for i, id := range subs {
			count := per
			if int32(i) < extra {
				count++
			}
			for p := next; p < next+count; p++ {
				owned[id] = append(owned[id], topicPartition{t, p})
			}
			next += count
		}
	}
	return build(owned)
}
