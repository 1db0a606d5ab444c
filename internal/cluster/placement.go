package cluster

import (
	"cmp"
	"slices"

	"kbroker/internal/meta"
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
