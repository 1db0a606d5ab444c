package admin

// Resetting a group's offsets as Kafka's consumer group tool does: plan new
// offsets (to the log start or end, an offset, a shift, a time, the current
// commits or an explicit plan), clamp them into the log, and commit them
// only when asked and only while the group has no members.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ResetTarget says where ResetGroupOffsets moves offsets to.
type ResetTarget int

const (
	ResetToEarliest ResetTarget = iota // the log start offset
	ResetToLatest                      // the log end offset
	ResetToOffset                      // OffsetReset.Offset
	ResetShiftBy                       // the committed offset + OffsetReset.Offset
	ResetToTime                        // the first offset at or after OffsetReset.Time
	ResetToCurrent                     // the committed offset (the log end where none)
	ResetToPlan                        // OffsetReset.Plan
)

// OffsetReset is one reset of a group's offsets.
type OffsetReset struct {
	To ResetTarget
	// Offset is the offset of ResetToOffset and the shift of ResetShiftBy.
	Offset int64
	Time   time.Time
	// Plan gives each partition's offset for ResetToPlan (the partitions
	// reset are the plan's).
	Plan map[TopicPartition]int64
	// Partitions to reset; nil means every partition the group committed
	// (Kafka's --all-topics).
	Partitions []TopicPartition
	// Execute commits the new offsets; without it the reset is a dry run.
	Execute bool
}

// ResetPlan is the outcome of a reset: the new offset of each partition
// and what was adjusted on the way.
type ResetPlan struct {
	Group   string
	Offsets map[TopicPartition]int64
	// Warnings are Kafka's notes on offsets moved into the log's range and
	// on partitions with no record after the time asked.
	Warnings []string
}

// ErrGroupNotInactive is wrapped by the error of a reset refused because
// the group has members.
var ErrGroupNotInactive = kerr.NonEmptyGroup

// ResetGroupOffsets plans a reset of a group's offsets and, with Execute,
// commits it. Kafka refuses to reset a group with members: the error then
// reads "Assignments can only be reset if the group 'g' is inactive, but
// the current state is Stable." and wraps kerr.NonEmptyGroup.
func (c *Client) ResetGroupOffsets(ctx context.Context, group string, r OffsetReset) (ResetPlan, error) {
	plan := ResetPlan{Group: group, Offsets: map[TopicPartition]int64{}}
	ds, err := c.DescribeGroups(ctx, group)
	if err != nil {
		return plan, err
	}
	if d := ds[0]; d.Err != nil {
		return plan, d.Err
	} else if !d.Inactive() {
		return plan, &Error{Resource: "group " + group, Err: ErrGroupNotInactive,
			Message: fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", group, d.State)}
	}
	var committed map[TopicPartition]CommittedOffset
	if r.Partitions == nil || r.To == ResetShiftBy || r.To == ResetToCurrent {
		if committed, err = c.CommittedOffsets(ctx, group); err != nil {
			return plan, err
		}
	}
	parts := r.Partitions
	switch {
	case r.To == ResetToPlan:
		parts = make([]TopicPartition, 0, len(r.Plan))
		for tp := range r.Plan {
			parts = append(parts, tp)
		}
	case parts == nil:
		for tp := range committed {
			parts = append(parts, tp)
		}
	}
	SortTopicPartitions(parts)
	if err := c.checkPartitionsExist(ctx, parts); err != nil {
		return plan, err
	}
	requested, err := c.requestedOffsets(ctx, r, parts, committed, &plan)
	if err != nil {
		return plan, err
	}
	if err := c.clampIntoLogs(ctx, requested, &plan); err != nil {
		return plan, err
	}
	if r.Execute {
		rs, err := c.CommitGroupOffsets(ctx, group, plan.Offsets)
		if err != nil {
			return plan, err
		}
		if err := rs.All(); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// requestedOffsets computes the offsets asked for, before clamping. The
// offsets it takes from the logs (earliest, latest, by time) need none.
func (c *Client) requestedOffsets(ctx context.Context, r OffsetReset, parts []TopicPartition, committed map[TopicPartition]CommittedOffset, plan *ResetPlan) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64, len(parts))
	fromLog := func(ts int64, what string, fallBackToEnd bool) error {
		listed, err := c.ListOffsets(ctx, parts, ts)
		if err != nil {
			return err
		}
		var empty []TopicPartition
		for _, tp := range parts {
			l := listed[tp]
			if l.Err != nil {
				return fmt.Errorf("Error getting %s of topic partition: %s: %w", what, tp, l.Err)
			}
			if l.Offset < 0 && fallBackToEnd {
				empty = append(empty, tp)
				continue
			}
			plan.Offsets[tp] = l.Offset
		}
		if len(empty) == 0 {
			return nil
		}
		ends, err := c.ListOffsets(ctx, empty, OffsetLatest)
		if err != nil {
			return err
		}
		for _, tp := range empty {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("Partition %d from topic %s is empty. Falling back to latest known offset.", tp.Partition, tp.Topic))
			if ends[tp].Err != nil {
				return ends[tp].Err
			}
			plan.Offsets[tp] = ends[tp].Offset
		}
		return nil
	}
	switch r.To {
	case ResetToEarliest:
		return nil, fromLog(OffsetEarliest, "starting offset", false)
	case ResetToLatest:
		return nil, fromLog(OffsetLatest, "ending offset", false)
	case ResetToTime:
		return nil, fromLog(r.Time.UnixMilli(), "offset by timestamp", true)
	case ResetToOffset:
		for _, tp := range parts {
			out[tp] = r.Offset
		}
	case ResetShiftBy:
		for _, tp := range parts {
			co, ok := committed[tp]
			if !ok {
				return nil, fmt.Errorf("Cannot shift offset for partition %s since there is no current committed offset", tp)
			}
			out[tp] = co.Offset + r.Offset
		}
	case ResetToCurrent:
		var none []TopicPartition
		for _, tp := range parts {
			if co, ok := committed[tp]; ok {
				plan.Offsets[tp] = co.Offset
			} else {
				none = append(none, tp)
			}
		}
		parts = none
		return nil, fromLog(OffsetLatest, "ending offset", false)
	case ResetToPlan:
		for _, tp := range parts {
			out[tp] = r.Plan[tp]
		}
	default:
		return nil, fmt.Errorf("unknown reset target %d", r.To)
	}
	return out, nil
}

// clampIntoLogs moves requested offsets beyond the log end to the end and
// before the log start to the start, as Kafka does.
func (c *Client) clampIntoLogs(ctx context.Context, requested map[TopicPartition]int64, plan *ResetPlan) error {
	if len(requested) == 0 {
		return nil
	}
	parts := make([]TopicPartition, 0, len(requested))
	for tp := range requested {
		parts = append(parts, tp)
	}
	SortTopicPartitions(parts)
	starts, err := c.ListOffsets(ctx, parts, OffsetEarliest)
	if err != nil {
		return err
	}
	ends, err := c.ListOffsets(ctx, parts, OffsetLatest)
	if err != nil {
		return err
	}
	for _, tp := range parts {
		off := requested[tp]
		start, end := starts[tp], ends[tp]
		if end.Err != nil {
			return end.Err
		}
		switch {
		case off > end.Offset:
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d.", off, tp, end.Offset))
			off = end.Offset
		case start.Err == nil && off < start.Offset:
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d.", off, tp, start.Offset))
			off = start.Offset
		}
		plan.Offsets[tp] = off
	}
	return nil
}

// checkPartitionsExist refuses partitions the cluster does not have, and
// ones without a leader, with Kafka's messages.
func (c *Client) checkPartitionsExist(ctx context.Context, parts []TopicPartition) error {
	var topics []string
	for _, tp := range parts {
		if len(topics) == 0 || topics[len(topics)-1] != tp.Topic {
			topics = append(topics, tp.Topic)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	ds, err := c.DescribeTopics(ctx, topics...)
	if err != nil {
		return err
	}
	leader := map[TopicPartition]int32{}
	for _, d := range ds {
		for _, p := range d.Partitions {
			leader[TopicPartition{Topic: d.Name, Partition: p.Partition}] = p.Leader
		}
	}
	var missing, leaderless []string
	for _, tp := range parts {
		l, ok := leader[tp]
		switch {
		case !ok:
			missing = append(missing, tp.String())
		case l < 0:
			leaderless = append(leaderless, tp.String())
		}
	}
	if len(missing) > 0 {
		return &Error{Err: kerr.UnknownTopicOrPartition, Message: fmt.Sprintf("The partitions \"%s\" do not exist", strings.Join(missing, ","))}
	}
	if len(leaderless) > 0 {
		return &Error{Err: kerr.LeaderNotAvailable, Message: fmt.Sprintf("The partitions \"%s\" have no leader", strings.Join(leaderless, ","))}
	}
	return nil
}
