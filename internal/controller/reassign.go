package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"kbroker/internal/meta"
	"kbroker/internal/refusal"
)

// Partition reassignment (AlterPartitionReassignments, KIP-455), as
// Kafka's controller runs it. Starting one rewrites the partition record:
// Replicas become the target followed by the replicas to remove, with
// AddingReplicas and RemovingReplicas saying which are which. The adding
// replicas' brokers see themselves among the replicas and start fetching
// from the leader (internal/replica follows the record); the leader adds
// each to the ISR once it has caught up. When the whole target is in the
// ISR the controller completes the reassignment: Replicas become the
// target, the removed replicas leave the ISR, and a leader outside the
// target hands over to the target's first in-sync replica.
//
// As in Kafka (PartitionChangeBuilder), the leader epoch is bumped when
// replicas are removed (a completion or a cancel) and when the leader
// changes, never when replicas are only added: the leader starts
// tracking an added follower within its epoch (internal/replica), so
// clients keep their epoch while the new replicas catch up.

// ErrNoReassignmentInProgress: a cancellation of a partition that is not
// being reassigned.
var ErrNoReassignmentInProgress = errors.New("no reassignment in progress")

// Reassignment is one partition being reassigned.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas are all the partition's replicas now (the target followed
	// by those being removed).
	Replicas, Adding, Removing []int32
}

// Reassign starts (or replaces) the reassignment of partition p of topic
// to target; a nil target cancels the one in progress. allowRFChange false
// (AlterPartitionReassignments v1, KIP-860) refuses a target of another
// size than the partition's replication factor.
func (c *Controller) Reassign(ctx context.Context, topic string, p int32, target []int32, allowRFChange bool) error {
	for attempt := 0; ; attempt++ {
		snap := c.store.Snapshot()
		t := snap.Topic(topic)
		if t == nil {
			return refusal.New(meta.ErrUnknownTopic, "Unable to find a topic named "+topic+".")
		}
		if p < 0 || p >= t.Partitions {
			return refusal.New(meta.ErrUnknownPartition, fmt.Sprintf("Unable to find partition %s:%d.", topic, p))
		}
		cur := snap.Partition(t, p)
		if len(cur.Replicas) == 0 {
			return refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Partition %s:%d has no recorded replicas to reassign.", topic, p))
		}
		eligible := EligibleLeaders(snap)
		var next meta.PartitionRecord
		var err error
		if target == nil {
			next, err = revertReassignment(cur, topic, p, eligible, c.uncleanElection(snap, topic))
		} else {
			next, err = c.startReassignment(snap, cur, target, allowRFChange, eligible)
		}
		if err != nil {
			return err
		}
		if next.Leader == cur.Leader && next.LeaderEpoch == cur.LeaderEpoch && slices.Equal(next.Replicas, cur.Replicas) &&
			slices.Equal(next.ISR, cur.ISR) && !cur.Reassigning() && !next.Reassigning() {
			return nil // the partition is where it was asked to be
		}
		_, err = c.store.AlterPartition(ctx, topic, t.ID, p, cur, next)
		if err == nil {
			c.log.Info("partition reassignment changed", "topic", topic, "partition", p, "replicas", next.Replicas,
				"adding", next.AddingReplicas, "removing", next.RemovingReplicas, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
			return nil
		}
		if (!errors.Is(err, meta.ErrPartitionChanged) && !errors.Is(err, meta.ErrFencedLeaderEpoch)) || attempt+1 == electionAttempts {
			return err
		}
	}
}

// startReassignment is cur reassigned to target, completed at once when
// the whole target is in sync already (a reassignment that only removes
// replicas, or reorders them).
func (c *Controller) startReassignment(snap *meta.Snapshot, cur meta.PartitionRecord, target []int32, allowRFChange bool, eligible map[int32]*meta.Broker) (meta.PartitionRecord, error) {
	if len(target) == 0 {
		return cur, refusal.New(ErrInvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	registered := snap.LiveBrokers()
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return cur, refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id))
		}
		if _, ok := registered[id]; !ok {
			return cur, refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id))
		}
	}
	if rf := len(cur.Replicas) - len(cur.RemovingReplicas); !allowRFChange && len(target) != rf {
		return cur, refusal.New(ErrInvalidReplicationFactor, fmt.Sprintf("The replication factor is changed from %d to %d", rf, len(target)))
	}
	// Kafka's PartitionReassignmentReplicas: the current replicas (which
	// include the adding ones of a reassignment being replaced) not in
	// the target are removed, the target's others are added.
	removing := slices.DeleteFunc(slices.Clone(cur.Replicas), func(id int32) bool { return slices.Contains(target, id) })
	adding := slices.DeleteFunc(slices.Clone(target), func(id int32) bool { return slices.Contains(cur.Replicas, id) })
	next := cur
	next.Replicas = append(slices.Clone(target), removing...)
	next.AddingReplicas, next.RemovingReplicas = adding, removing
	if done, ok := completeReassignment(next, eligible); ok {
		return done, nil // nothing was added: one change
	}
	if !next.Reassigning() {
		next.AddingReplicas, next.RemovingReplicas = nil, nil
	}
	return next, nil
}

// revertReassignment cancels cur's reassignment (Kafka's
// PartitionReassignmentRevert): the adding replicas go, the removing ones
// stay. With no in-sync replica left that is unclean, allowed only where
// unclean.leader.election.enable is.
func revertReassignment(cur meta.PartitionRecord, topic string, p int32, eligible map[int32]*meta.Broker, unclean bool) (meta.PartitionRecord, error) {
	if !cur.Reassigning() {
		return cur, refusal.New(ErrNoReassignmentInProgress, "No partition reassignment is in progress.")
	}
	next := cur
	next.Replicas = slices.DeleteFunc(slices.Clone(cur.Replicas), func(id int32) bool { return slices.Contains(cur.AddingReplicas, id) })
	next.ISR = slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return slices.Contains(cur.AddingReplicas, id) })
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if len(next.ISR) == 0 {
		if !unclean {
			return cur, refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic, p))
		}
		next.ISR = []int32{next.Replicas[0]}
	}
	if !slices.Contains(next.ISR, next.Leader) {
		next.Leader = firstEligible(next.Replicas, next.ISR, eligible)
	}
	if len(cur.AddingReplicas) > 0 || next.Leader != cur.Leader {
		next.LeaderEpoch = cur.LeaderEpoch + 1
	}
	return next, nil
}

// completeReassignment is r with its reassignment completed, if every
// target replica is in sync (Kafka's maybeCompleteReassignment); ok is
// false while it is not, or when no target replica in sync may lead.
func completeReassignment(r meta.PartitionRecord, eligible map[int32]*meta.Broker) (meta.PartitionRecord, bool) {
	if !r.Reassigning() {
		return r, false
	}
	removed := func(id int32) bool { return slices.Contains(r.RemovingReplicas, id) }
	target := slices.DeleteFunc(slices.Clone(r.Replicas), removed)
	isr := slices.DeleteFunc(slices.Clone(r.ISR), removed)
	if len(isr) == 0 {
		return r, false
	}
	for _, id := range target {
		if !slices.Contains(isr, id) {
			return r, false
		}
	}
	next := r
	next.Replicas, next.ISR = target, isr
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if !slices.Contains(target, r.Leader) || !slices.Contains(isr, r.Leader) {
		next.Leader = firstEligible(target, isr, eligible)
		if next.Leader < 0 {
			return r, false // wait for a target replica that may lead
		}
	}
	if len(r.RemovingReplicas) > 0 || next.Leader != r.Leader {
		next.LeaderEpoch = r.LeaderEpoch + 1
	}
	return next, true
}

// firstEligible is the first of replicas in isr that may lead, -1 if none.
func firstEligible(replicas, isr []int32, eligible map[int32]*meta.Broker) int32 {
	for _, id := range replicas {
		if _, ok := eligible[id]; ok && slices.Contains(isr, id) {
			return id
		}
	}
	return -1
}

// Reassignments lists the partitions being reassigned in snap: of the
// named topics and partitions (nil partitions: all of the topic), or of
// every topic when topics is nil. Unknown topics and partitions are left
// out, as Kafka's controller leaves them.
func Reassignments(snap *meta.Snapshot, topics map[string][]int32) []Reassignment {
	var out []Reassignment
	add := func(name string, t *meta.Topic, p int32) {
		if p < 0 || p >= t.Partitions {
			return
		}
		if r := snap.Partition(t, p); r.Reassigning() {
			out = append(out, Reassignment{Topic: name, Partition: p, Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas})
		}
	}
	if topics == nil {
		for name, t := range snap.AllTopics() {
			for p := int32(0); p < t.Partitions; p++ {
				add(name, t, p)
			}
		}
	} else {
		for name, parts := range topics {
			t := snap.Topic(name)
			if t == nil {
				continue
			}
			if parts == nil {
				for p := int32(0); p < t.Partitions; p++ {
					add(name, t, p)
				}
			}
			for _, p := range parts {
				add(name, t, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b Reassignment) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// reassignmentMoved reports whether ev changed a partition that is being
// reassigned: an ISR change that may complete it.
func reassignmentMoved(ev meta.Event) bool {
	for _, k := range ev.ChangedPartitions() {
		t := ev.Cur.TopicByID(k.Topic)
		if t != nil && k.Partition < t.Partitions && ev.Cur.Partition(t, k.Partition).Reassigning() {
			return true
		}
	}
	return false
}
