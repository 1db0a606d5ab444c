package controller

import (
	"slices"
	"testing"

	"kbroker/internal/meta"
)

func TestNextStateElectsFromTheISRAndKeepsTheLastInSyncReplica(t *testing.T) {
	live := func(ids ...int32) map[int32]*meta.Broker {
		m := map[int32]*meta.Broker{}
		for _, id := range ids {
			m[id] = &meta.Broker{ID: id}
		}
		return m
	}
	rec := func(leader, epoch int32, isr ...int32) meta.PartitionRecord {
		return meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr, Leader: leader, LeaderEpoch: epoch}
	}
	for _, tc := range []struct {
		name    string
		cur     meta.PartitionRecord
		live    map[int32]*meta.Broker
		unclean bool
		want    *meta.PartitionRecord // nil: no change
	}{
		{"all live", rec(1, 0, 1, 2, 3), live(1, 2, 3), false, nil},
		{"a follower gone", rec(1, 0, 1, 2, 3), live(1, 2), false, &meta.PartitionRecord{ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0}},
		{"the leader gone", rec(1, 0, 1, 2, 3), live(2, 3), false, &meta.PartitionRecord{ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 1}},
		{"the leader gone, next in sync is 3", rec(1, 4, 1, 3), live(2, 3), false, &meta.PartitionRecord{ISR: []int32{3}, Leader: 3, LeaderEpoch: 5}},
		{"no in-sync replica live", rec(1, 2, 1), live(2, 3), false, &meta.PartitionRecord{ISR: []int32{1}, Leader: -1, LeaderEpoch: 3}},
		{"offline stays offline", rec(-1, 3, 1), live(2, 3), false, nil},
		{"the last in-sync replica returns", rec(-1, 3, 1), live(1, 2), false, &meta.PartitionRecord{ISR: []int32{1}, Leader: 1, LeaderEpoch: 4}},
		{"unclean election", rec(1, 2, 1), live(3), true, &meta.PartitionRecord{ISR: []int32{3}, Leader: 3, LeaderEpoch: 3}},
	} {
		got, changed := nextState(tc.cur, tc.live, tc.unclean)
		switch {
		case tc.want == nil && changed:
			t.Errorf("%s: changed to %+v, want no change", tc.name, got)
		case tc.want != nil && (!changed || got.Leader != tc.want.Leader || got.LeaderEpoch != tc.want.LeaderEpoch || !slices.Equal(got.ISR, tc.want.ISR)):
			t.Errorf("%s: %+v (changed %v), want %+v", tc.name, got, changed, *tc.want)
		}
	}
}
