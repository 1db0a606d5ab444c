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

func TestPlaceRoundRobinsFromStart(t *testing.T) {
	got := Place(brokersOn(map[int32]string{1: "", 2: "", 3: ""}), 5, 1)
	want := [][]int32{{2}, {3}, {1}, {2}, {3}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Place = %v, want %v", got, want)
	}
	if Place(nil, 3, 0) != nil {
		t.Error("placing on no brokers should give nothing")
	}
}
