package controller

import (
	"errors"
	"slices"
	"testing"

	"kbroker/internal/meta"
)

func brokers(ids ...int32) map[int32]*meta.Broker {
	m := map[int32]*meta.Broker{}
	for _, id := range ids {
		m[id] = &meta.Broker{ID: id}
	}
	return m
}

func TestRequestedElectionFollowsKafkasRules(t *testing.T) {
	rec := func(leader int32, isr ...int32) meta.PartitionRecord {
		return meta.PartitionRecord{Replicas: []int32{1, 2, 3}, ISR: isr, Leader: leader, LeaderEpoch: 4}
	}
	for _, tc := range []struct {
		name       string
		cur        meta.PartitionRecord
		typ        ElectionType
		eligible   map[int32]*meta.Broker
		wantErr    error
		wantLeader int32
		wantISR    []int32
	}{
		{"preferred leads already", rec(1, 1, 2, 3), ElectPreferred, brokers(1, 2, 3), ErrElectionNotNeeded, 0, nil},
		{"preferred back", rec(2, 1, 2, 3), ElectPreferred, brokers(1, 2, 3), nil, 1, []int32{1, 2, 3}},
		{"preferred out of sync", rec(2, 2, 3), ElectPreferred, brokers(1, 2, 3), ErrPreferredLeaderNotAvailable, 0, nil},
		{"preferred shutting down", rec(2, 1, 2, 3), ElectPreferred, brokers(2, 3), ErrPreferredLeaderNotAvailable, 0, nil},
		{"unclean with a leader", rec(2, 2), ElectUnclean, brokers(1, 2, 3), ErrElectionNotNeeded, 0, nil},
		{"unclean from the ISR first", rec(-1, 3), ElectUnclean, brokers(2, 3), nil, 3, []int32{3}},
		{"unclean out of the ISR", rec(-1, 1), ElectUnclean, brokers(2, 3), nil, 2, []int32{2}},
		{"unclean with nobody", rec(-1, 1), ElectUnclean, brokers(), ErrEligibleLeadersNotAvailable, 0, nil},
	} {
		got, err := requestedElection(tc.cur, tc.typ, tc.eligible)
		switch {
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %+v %v, want %v", tc.name, got, err, tc.wantErr)
			}
		case err != nil || got.Leader != tc.wantLeader || !slices.Equal(got.ISR, tc.wantISR) || got.LeaderEpoch != 5:
			t.Errorf("%s: %+v %v, want leader %d isr %v at epoch 5", tc.name, got, err, tc.wantLeader, tc.wantISR)
		}
	}
}

func TestReassignmentCompletesOnlyWithTheWholeTargetInSync(t *testing.T) {
	moving := meta.PartitionRecord{Replicas: []int32{2, 3, 4, 1}, AddingReplicas: []int32{4}, RemovingReplicas: []int32{1}, Leader: 1, LeaderEpoch: 7}
	moving.ISR = []int32{1, 2, 3}
	if got, ok := completeReassignment(moving, brokers(1, 2, 3, 4)); ok {
		t.Errorf("completed with broker 4 out of sync: %+v", got)
	}
	moving.ISR = []int32{1, 2, 3, 4}
	got, ok := completeReassignment(moving, brokers(1, 2, 3, 4))
	if !ok || !slices.Equal(got.Replicas, []int32{2, 3, 4}) || !slices.Equal(got.ISR, []int32{2, 3, 4}) || got.Leader != 2 || got.LeaderEpoch != 8 || got.Reassigning() {
		t.Errorf("completion: %+v %v, want replicas and ISR 2,3,4 led by 2 at epoch 8", got, ok)
	}
	// Only adding: the leader stays, and so does its epoch.
	adding := meta.PartitionRecord{Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 7}
	if got, ok := completeReassignment(adding, brokers(1, 2, 3)); !ok || got.Leader != 1 || got.LeaderEpoch != 7 || got.Reassigning() {
		t.Errorf("completing an addition: %+v %v", got, ok)
	}
	// No target replica in sync may lead: wait.
	if got, ok := completeReassignment(moving, brokers(1)); ok {
		t.Errorf("completed with no target replica eligible: %+v", got)
	}
}

func TestRevertReassignment(t *testing.T) {
	moving := meta.PartitionRecord{Replicas: []int32{1, 3, 2}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3}
	got, err := revertReassignment(moving, "t", 0, brokers(1, 2, 3), false)
	if err != nil || !slices.Equal(got.Replicas, []int32{1, 2}) || !slices.Equal(got.ISR, []int32{1, 2}) || got.Leader != 1 || got.LeaderEpoch != 4 || got.Reassigning() {
		t.Errorf("revert: %+v %v", got, err)
	}
	// The adding replica alone in sync: unclean.
	onlyNew := moving
	onlyNew.ISR, onlyNew.Leader = []int32{3}, 3
	if _, err := revertReassignment(onlyNew, "t", 0, brokers(1, 2, 3), false); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Errorf("unclean revert without unclean.leader.election.enable: %v", err)
	}
	if got, err := revertReassignment(onlyNew, "t", 0, brokers(1, 2, 3), true); err != nil || got.Leader != 1 || !slices.Equal(got.ISR, []int32{1}) {
		t.Errorf("unclean revert: %+v %v", got, err)
	}
	if _, err := revertReassignment(meta.PartitionRecord{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, "t", 0, brokers(1, 2), false); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Errorf("revert without a reassignment: %v", err)
	}
}
