package controller

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"kbroker/internal/meta"
	"kbroker/internal/refusal"
)

// Place gives each of count partitions, numbered from first, rf replicas
// (leader first) on the live brokers, as Kafka's AdminUtils assigns them:
// leaders go round-robin from index start over the brokers ordered by
// RackAlternated, and each further replica at a shift from its leader that
// grows by one every time the leaders have gone round all the brokers, so
// that followers spread too. When every broker has a rack, a follower is
// not put on a rack (or broker) that already holds a replica of the
// partition while another has none. rf must not exceed len(brokers).
func Place(brokers map[int32]*meta.Broker, count int32, rf int, first int32, start, shift int) [][]int32 {
	order := RackAlternated(brokers)
	n := len(order)
	if n == 0 || rf <= 0 || rf > n {
		return nil
	}
	rackOf := func(id int32) string {
		if r := brokers[id].Rack; r != nil {
			return *r
		}
		return ""
	}
	racks := map[string]bool{}
	racked := true
	for _, id := range order {
		racks[rackOf(id)] = true
		racked = racked && rackOf(id) != ""
	}
	out := make([][]int32, count)
	for i := range out {
		p := int(first) + i
		if p > 0 && p%n == 0 {
			shift++
		}
		lead := (p + start) % n
		replicas := []int32{order[lead]}
		if !racked {
			for j := range rf - 1 {
				replicas = append(replicas, order[followerIndex(lead, shift, j, n)])
			}
			out[i] = replicas
			continue
		}
		onRack := map[string]bool{rackOf(order[lead]): true}
		for k := 0; len(replicas) < rf; k++ {
			id := order[followerIndex(lead, shift*len(racks), k, n)]
			if (onRack[rackOf(id)] && len(onRack) < len(racks)) || slices.Contains(replicas, id) {
				continue
			}
			onRack[rackOf(id)] = true
			replicas = append(replicas, id)
		}
		out[i] = replicas
	}
	return out
}

// followerIndex is the index of the j-th follower of the partition led by
// index lead: never the leader's own, since the step is 1..n-1.
func followerIndex(lead, shift, j, n int) int {
	if n == 1 {
		return lead
	}
	return (lead + 1 + (shift+j)%(n-1)) % n
}

// RackAlternated orders broker ids so that consecutive ids sit on different
// racks when racks are set (rack a: 1,4; rack b: 2; rack c: 3 → 1,2,3,4),
// and by id otherwise. As in Kafka, racks count only when every broker has
// one.
func RackAlternated(brokers map[int32]*meta.Broker) []int32 {
	ids := make([]int32, 0, len(brokers))
	racked := true
	for id, b := range brokers {
		ids = append(ids, id)
		racked = racked && b.Rack != nil && *b.Rack != ""
	}
	slices.Sort(ids)
	if !racked {
		return ids
	}
	byRack := map[string][]int32{}
	for _, id := range ids {
		r := *brokers[id].Rack
		byRack[r] = append(byRack[r], id)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.SortFunc(racks, cmp.Compare)
	out := make([]int32, 0, len(ids))
	for i := 0; len(out) < len(ids); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// place puts rf replicas of each of count new partitions (numbered from
// first) on the live brokers, from a random start and shift (as Kafka
// does, so that topics do not all begin on the same broker).
func (c *Controller) place(snap *meta.Snapshot, count int32, rf int, first int32) [][]int32 {
	live := c.liveBrokers(snap)
	if len(live) == 0 {
		return nil
	}
	return Place(live, count, rf, first, rand.IntN(len(live)), rand.IntN(len(live)))
}

// checkReplicationFactor applies Kafka's rule: no more replicas than live
// brokers.
func (c *Controller) checkReplicationFactor(rf int16) error {
	if live := len(c.liveBrokers(c.store.Snapshot())); int(rf) > live {
		return refusal.New(ErrInvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			rf, rf, live))
	}
	return nil
}

// checkAssignment checks manual replica assignments, numbered from first.
func (c *Controller) checkAssignment(assignment map[int32][]int32, first int32) error {
	live := c.liveBrokers(c.store.Snapshot())
	for i := first; i < first+int32(len(assignment)); i++ {
		replicas, ok := assignment[i]
		if !ok {
			return refusal.New(ErrInvalidReplicaAssignment, "Partitions must be numbered consecutively from "+strconv.Itoa(int(first)))
		}
		if len(replicas) == 0 {
			return refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Partition %d has an empty replica list", i))
		}
		seen := map[int32]bool{}
		for _, r := range replicas {
			if seen[r] {
				return refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Partition %d lists broker %d twice", i, r))
			}
			seen[r] = true
			if _, live := live[r]; !live {
				return refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Unknown broker %d in replica assignment of partition %d", r, i))
			}
		}
	}
	return nil
}
