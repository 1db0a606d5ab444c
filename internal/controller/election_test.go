package controller

import (
	"slices"
	"testing"

	"kbroker/internal/meta"
)

func TestNextStateElectsFromTheISRThenTheELR(t *testing.T) {
	live := func(ids ...int32) map[int32]*meta.Broker {
		m := map[int32]*meta.Broker{}
		for _, id := range ids {
			m[id] = &meta.Broker{ID: id}
		}
		return m
	}
	rec := func(leader, epoch int32, isr []int32, elr ...int32) meta.PartitionRecord {
		return meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr, ELR: elr, Leader: leader, LeaderEpoch: epoch}
	}
	isr := func(ids ...int32) []int32 { return ids }
	type want struct {
		leader, epoch       int32
		isr, elr, lastKnown []int32
	}
	for _, tc := range []struct {
		name    string
		cur     meta.PartitionRecord
		live    map[int32]*meta.Broker
		unclean bool
		minISR  int
		want    *want // nil: no change
	}{
		{"all live", rec(1, 0, isr(1, 2, 3)), live(1, 2, 3), false, 2, nil},
		{"a follower gone, still at min ISR", rec(1, 0, isr(1, 2, 3)), live(1, 2), false, 2, &want{1, 0, isr(1, 2), nil, nil}},
		{"a second follower gone: below min ISR, it joins the ELR", rec(1, 0, isr(1, 2)), live(1), false, 2, &want{1, 0, isr(1), isr(2), nil}},
		{"the leader gone", rec(1, 0, isr(1, 2, 3)), live(2, 3), false, 2, &want{2, 1, isr(2, 3), nil, nil}},
		{"the leader gone, next in sync is 3", rec(1, 4, isr(1, 3)), live(2, 3), false, 1, &want{3, 5, isr(3), nil, nil}},
		{"the last in-sync replica gone: empty ISR, all in the ELR", rec(1, 2, isr(1), 2), live(3), false, 2, &want{-1, 3, isr(), isr(1, 2), isr(1)}},
		{"min ISR 1: the last one still joins the ELR", rec(1, 2, isr(1)), live(2, 3), false, 1, &want{-1, 3, isr(), isr(1), isr(1)}},
		{"offline stays offline", meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr(), ELR: isr(1, 2), LastKnownELR: isr(1), Leader: -1, LeaderEpoch: 3}, live(3), false, 2, nil},
		{"an ELR member returns and leads alone", meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr(), ELR: isr(1, 2), LastKnownELR: isr(1), Leader: -1, LeaderEpoch: 3}, live(2, 3), false, 2, &want{2, 4, isr(2), isr(1), nil}},
		{"a replica out of the ELR returning does not lead", meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr(), ELR: isr(1), Leader: -1, LeaderEpoch: 3}, live(3), false, 2, nil},
		{"old record: last in-sync replica kept in the ISR returns", rec(-1, 3, isr(1)), live(1, 2), false, 2, &want{1, 4, isr(1), nil, nil}},
		{"unclean election forgets the ELR", meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr(), ELR: isr(1), LastKnownELR: isr(1), Leader: -1, LeaderEpoch: 3}, live(3), true, 2, &want{3, 4, isr(3), nil, nil}},
		{"ISR back at min ISR clears the ELR", rec(2, 4, isr(2, 3), 1), live(2, 3), false, 2, &want{2, 4, isr(2, 3), nil, nil}},
	} {
		got, changed := nextState(tc.cur, tc.live, func(int32) bool { return false }, tc.unclean, tc.minISR)
		switch {
		case tc.want == nil && changed:
			t.Errorf("%s: changed to %+v, want no change", tc.name, got)
		case tc.want != nil && (!changed || got.Leader != tc.want.leader || got.LeaderEpoch != tc.want.epoch || !slices.Equal(got.ISR, tc.want.isr) ||
			!slices.Equal(got.ELR, tc.want.elr) || !slices.Equal(got.LastKnownELR, tc.want.lastKnown)):
			t.Errorf("%s: %+v (changed %v), want %+v", tc.name, got, changed, *tc.want)
		}
	}
}

// A broker that registered again after an unclean shutdown may have lost
// records: it counts as gone (the controller passes only the eligible
// brokers as live), and it also leaves the ELR, the ELR of the change that
// takes it out of the ISR included (Kafka's uncleanShutdownReplicas). It
// stays the last known leader, which leads once the ELR is empty and it
// is eligible again (Kafka 4's balanced recovery).
func TestNextStateLeavesUncleanlyStoppedBrokersOutOfTheELR(t *testing.T) {
	live := func(ids ...int32) map[int32]*meta.Broker {
		m := map[int32]*meta.Broker{}
		for _, id := range ids {
			m[id] = &meta.Broker{ID: id}
		}
		return m
	}
	ids := func(ids ...int32) []int32 { return ids }
	stopped := func(ids ...int32) func(int32) bool { return func(id int32) bool { return slices.Contains(ids, id) } }
	for _, tc := range []struct {
		name    string
		cur     meta.PartitionRecord
		live    map[int32]*meta.Broker
		stopped func(int32) bool
		want    meta.PartitionRecord
		changed bool
	}{
		{"out of the ELR it is in",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), ELR: ids(1, 2), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, live(3), stopped(2),
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), ELR: ids(1), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, true},
		{"out of the ISR, and not into the ELR",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(1, 2), Leader: 1, LeaderEpoch: 3}, live(1), stopped(2),
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(1), Leader: 1, LeaderEpoch: 3}, true},
		{"a leader that lost its leadership to its unclean shutdown",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(1, 2), Leader: 1, LeaderEpoch: 3}, live(2), stopped(1),
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(2), Leader: 2, LeaderEpoch: 4}, true},
		{"the last ELR member out: the last known leader stays",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), ELR: ids(1), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, live(), stopped(1),
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, true},
		{"empty ISR and ELR: the last known leader leads once eligible",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, live(1, 2), stopped(),
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(1), Leader: 1, LeaderEpoch: 4}, true},
		{"empty ISR and ELR: no one else leads",
			meta.PartitionRecord{Replicas: ids(1, 2, 3), ISR: ids(), LastKnownELR: ids(1), Leader: -1, LeaderEpoch: 3}, live(2, 3), stopped(),
			meta.PartitionRecord{}, false},
	} {
		got, changed := nextState(tc.cur, tc.live, tc.stopped, false, 2)
		if changed != tc.changed || changed && (got.Leader != tc.want.Leader || got.LeaderEpoch != tc.want.LeaderEpoch ||
			!slices.Equal(got.ISR, tc.want.ISR) || !slices.Equal(got.ELR, tc.want.ELR) || !slices.Equal(got.LastKnownELR, tc.want.LastKnownELR)) {
			t.Errorf("%s: %+v (changed %v), want %+v (changed %v)", tc.name, got, changed, tc.want, tc.changed)
		}
	}
}
