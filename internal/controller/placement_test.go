package controller

import (
	"slices"
	"testing"

	"kbroker/internal/meta"
)

func brokersOn(racks map[int32]string) map[int32]*meta.Broker {
	out := map[int32]*meta.Broker{}
	for id, r := range racks {
		b := &meta.Broker{ID: id}
		if r != "" {
			b.Rack = &r
		}
		out[id] = b
	}
	return out
}

func TestRackAlternatedInterleavesRacksAndIgnoresPartialRacks(t *testing.T) {
	got := RackAlternated(brokersOn(map[int32]string{1: "a", 2: "a", 3: "b", 4: "c", 5: "b"}))
	if want := []int32{1, 3, 4, 2, 5}; !slices.Equal(got, want) {
		t.Errorf("racked order %v, want %v", got, want)
	}
	// As in Kafka, racks count only when every broker has one.
	got = RackAlternated(brokersOn(map[int32]string{1: "a", 2: "a", 3: ""}))
	if want := []int32{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("partly racked order %v, want %v", got, want)
	}
}

func TestPlaceRoundRobinsLeadersAndSpreadsFollowers(t *testing.T) {
	three := brokersOn(map[int32]string{1: "", 2: "", 3: ""})
	got := Place(three, 5, 1, 0, 1, 0)
	want := [][]int32{{2}, {3}, {1}, {2}, {3}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Place rf 1 = %v, want %v", got, want)
	}
	// Kafka's assignment of 6 partitions, rf 3, start 0, shift 0: the
	// follower shift grows after each round of leaders.
	got = Place(three, 6, 3, 0, 0, 0)
	want = [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Place rf 3 = %v, want %v", got, want)
	}
	if Place(nil, 3, 1, 0, 0, 0) != nil || Place(three, 1, 4, 0, 0, 0) != nil {
		t.Error("placing on no brokers, or more replicas than brokers, should give nothing")
	}
}

// With racks on every broker, no partition has two replicas on one rack
// while a rack holds none of it, whatever the start and shift.
func TestPlaceRackAwareNeverDoublesARackBeforeFillingAll(t *testing.T) {
	brokers := brokersOn(map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"})
	for start := range 6 {
		for shift := range 6 {
			for p, replicas := range Place(brokers, 12, 3, 0, start, shift) {
				racks := map[string]bool{}
				for _, id := range replicas {
					racks[*brokers[id].Rack] = true
				}
				if len(replicas) != 3 || len(racks) != 3 {
					t.Fatalf("start %d shift %d partition %d: replicas %v on racks %v", start, shift, p, replicas, racks)
				}
			}
		}
	}
}
