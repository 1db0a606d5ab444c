// Package assignor holds the server-side partition assignors of KIP-848
// consumer groups: `uniform` (Kafka's default, balanced and sticky) and
// `range` (contiguous ranges per topic, for co-partitioned topics). The
// coordinator gives an assignor the members with their subscriptions and
// current assignments and the subscribed topics as the metadata has them;
// the assignor returns every member's target assignment.
package assignor

import (
	"slices"
	"sort"
)

// TopicID is a topic's 16-byte id, as assignments name topics by id.
type TopicID = [16]byte

// Assignment maps topics to sorted partitions.
type Assignment map[TopicID][]int32

// Member is one group member as an assignor sees it.
type Member struct {
	ID string
	// InstanceID is the static member's group.instance.id, or "".
	InstanceID string
	// Topics are the ids of the existing topics the member subscribes to.
	Topics []TopicID
	// Current is the member's target assignment so far, kept as much as
	// possible by a sticky assignor.
	Current Assignment
}

// Assignor computes a group's target assignment.
type Assignor interface {
	// Name is the assignor's wire name (ServerAssignor).
	Name() string
	// Assign returns the target assignment of every member; partitions
	// gives each subscribed topic's partition count.
	Assign(members []Member, partitions map[TopicID]int32) map[string]Assignment
}

// Named returns the assignor of a wire name, or nil.
func Named(name string) Assignor {
	switch name {
	case "uniform":
		return Uniform{}
	case "range":
		return Range{}
	}
	return nil
}

type topicPartition struct {
	topic     TopicID
	partition int32
}

func sortedMembers(members []Member) []Member {
	out := slices.Clone(members)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func sortedTopics(partitions map[TopicID]int32) []TopicID {
	ids := make([]TopicID, 0, len(partitions))
	for id := range partitions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

func build(owned map[string][]topicPartition) map[string]Assignment {
	out := make(map[string]Assignment, len(owned))
	for id, tps := range owned {
		a := Assignment{}
		for _, tp := range tps {
			a[tp.topic] = append(a[tp.topic], tp.partition)
		}
		for t := range a {
			slices.Sort(a[t])
		}
		out[id] = a
	}
	return out
}
