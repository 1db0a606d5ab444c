package controller

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"kbroker/internal/meta"
	"kbroker/internal/refusal"
	"kbroker/internal/replica"
)

// Place gives each of count partitions one replica (its leader), going
// round-robin from index start over the live brokers ordered by
// RackAlternated, as Kafka's assignReplicasToBrokers places first replicas.
func Place(brokers map[int32]*meta.Broker, count int32, start int) [][]int32 {
	order := RackAlternated(brokers)
	if len(order) == 0 {
		return nil
	}
	out := make([][]int32, count)
	for p := range out {
		out[p] = []int32{order[(start+p)%len(order)]}
	}
	return out
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

// place picks a leader for each of count new partitions across the live
// brokers, rack-aware round-robin from a random start (as Kafka does, so
// that topics do not all begin on the same broker).
func (c *Controller) place(snap *meta.Snapshot, count int32) [][]int32 {
	live := c.liveBrokers(snap)
	return Place(live, count, rand.IntN(len(live)))
}

// checkReplicationFactor applies Kafka's rule (no more replicas than live
// brokers), then kbroker's own: one replica per partition.
func (c *Controller) checkReplicationFactor(rf int16) error {
	if live := len(c.liveBrokers(c.store.Snapshot())); int(rf) > live {
		return refusal.New(ErrInvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			rf, rf, live))
	}
	if rf > replica.MaxReplicationFactor {
		return refusal.New(ErrInvalidReplicationFactor, fmt.Sprintf("Replication factor %d is not supported: kbroker keeps one replica of each partition (its leader); use a replication factor of 1 or -1.", rf))
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
