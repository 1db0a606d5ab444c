package controller

import (
	"context"
	"fmt"

	"kbroker/internal/meta"
	"kbroker/internal/refusal"
)

// PartitionIncrease raises a topic's partition count (never lowers it).
type PartitionIncrease struct {
	Topic string
	Count int32 // the new total
	// Assignment lists the replicas of each new partition; nil: the
	// controller places them.
	Assignment [][]int32
}

// CheckedIncrease is a PartitionIncrease that CheckPartitions passed: the
// only kind CreatePartitions takes.
type CheckedIncrease struct {
	inc PartitionIncrease
	// Added is how many partitions the increase adds.
	Added int32
}

// CheckPartitions validates inc against snap without writing anything.
func (c *Controller) CheckPartitions(snap *meta.Snapshot, inc PartitionIncrease) (CheckedIncrease, error) {
	added, err := c.checkPartitions(snap, inc)
	return CheckedIncrease{inc: inc, Added: added}, err
}

func (c *Controller) checkPartitions(snap *meta.Snapshot, inc PartitionIncrease) (added int32, err error) {
	t := snap.Topic(inc.Topic)
	if t == nil {
		return 0, refusal.New(meta.ErrUnknownTopic, fmt.Sprintf("The topic '%s' does not exist.", inc.Topic))
	}
	if inc.Count <= t.Partitions {
		if inc.Count == t.Partitions {
			return 0, refusal.New(ErrInvalidPartitions, fmt.Sprintf("Topic already has %d partitions.", t.Partitions))
		}
		return 0, refusal.New(ErrInvalidPartitions, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", inc.Topic, t.Partitions, inc.Count))
	}
	added = inc.Count - t.Partitions
	if inc.Assignment != nil {
		if len(inc.Assignment) != int(added) {
			return 0, refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", added, len(inc.Assignment)))
		}
		assignment := map[int32][]int32{}
		for i, replicas := range inc.Assignment {
			assignment[t.Partitions+int32(i)] = replicas
		}
		if err := c.checkAssignment(assignment, t.Partitions); err != nil {
			return 0, err
		}
		rf := topicReplicationFactor(snap, t)
		for _, replicas := range inc.Assignment {
			if len(replicas) != rf {
				return 0, refusal.New(ErrInvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf))
			}
		}
	} else if err := c.checkReplicationFactor(int16(topicReplicationFactor(snap, t))); err != nil {
		return 0, err
	}
	if err := checkRecordCount(int64(added)); err != nil {
		return 0, err
	}
	return added, nil
}

// CreatePartitions stores a checked increase, placing the new partitions
// if it has no assignment: only now that the count passed every check.
func (c *Controller) CreatePartitions(ctx context.Context, checked CheckedIncrease) error {
	replicas := checked.inc.Assignment
	if replicas == nil {
		snap := c.store.Snapshot()
		rf := 1
		if t := snap.Topic(checked.inc.Topic); t != nil {
			rf = topicReplicationFactor(snap, t)
		}
		replicas = c.place(snap, checked.Added, rf, checked.inc.Count-checked.Added)
	}
	return c.store.AddPartitions(ctx, checked.inc.Topic, checked.inc.Count, replicas)
}

// topicReplicationFactor is how many replicas t's partitions have: those
// of partition 0, as Kafka takes it for new partitions.
func topicReplicationFactor(snap *meta.Snapshot, t *meta.Topic) int {
	if t.Partitions > 0 {
		if n := len(snap.Partition(t, 0).Replicas); n > 0 {
			return n
		}
	}
	return max(1, int(t.ReplicationFactor))
}
