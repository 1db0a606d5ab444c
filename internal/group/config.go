package group

import (
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// Topic is the internal topic holding groups and committed offsets.
const Topic = "__consumer_offsets"

// Config holds the broker settings the coordinator applies.
type Config struct {
	// Partitions is offsets.topic.num.partitions.
	Partitions int32
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms).
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size.
	MaxSize int
	// MaxMetadataBytes is offset.metadata.max.bytes.
	MaxMetadataBytes int
	// OffsetsRetention is offsets.retention.minutes; RetentionCheck is
	// offsets.retention.check.interval.ms (0: never checked).
	OffsetsRetention, RetentionCheck time.Duration
	// Consumer holds the KIP-848 consumer group settings.
	Consumer ConsumerConfig
	// Metadata returns the broker's metadata now, from which consumer
	// groups resolve their subscribed topics (nil: no topics).
	Metadata func() *meta.Snapshot
	// GroupSettings returns a group's own session timeout and heartbeat
	// interval (its group configs, KIP-848), consulted on every
	// ConsumerGroupHeartbeat; nil, or !ok, means the broker defaults.
	GroupSettings func(groupID string) (sessionTimeout, heartbeatInterval time.Duration, ok bool)
}

// newMemberJoinTimeout is how long a brand-new member's parked JoinGroup
// may wait for the rebalance to complete before it is dropped (Kafka's
// constant classic-group new-member join timeout).
const newMemberJoinTimeout = 5 * time.Minute

// ConfigFrom reads the coordinator settings from the broker's static
// configuration.
func ConfigFrom(l config.Layers) Config {
	num := func(name string) int64 { n, _ := strconv.ParseInt(config.BrokerValue(name, l), 10, 64); return n }
	ms := func(name string) time.Duration { return time.Duration(num(name)) * time.Millisecond }
	return Config{
		Partitions:            int32(num("offsets.topic.num.partitions")),
		MinSessionTimeout:     ms("group.min.session.timeout.ms"),
		MaxSessionTimeout:     ms("group.max.session.timeout.ms"),
		InitialRebalanceDelay: ms("group.initial.rebalance.delay.ms"),
		MaxSize:               int(num("group.max.size")),
		MaxMetadataBytes:      int(num("offset.metadata.max.bytes")),
		OffsetsRetention:      time.Duration(num("offsets.retention.minutes")) * time.Minute,
		RetentionCheck:        ms("offsets.retention.check.interval.ms"),
		Consumer:              consumerConfigFrom(l),
	}
}

// Partition is the `__consumer_offsets` partition of group: Kafka's
// abs(groupId.hashCode()) % partitions, with Java's String.hashCode over
// UTF-16 code units and Utils.abs mapping MIN_VALUE to 0, so a group lands
// on the partition a Kafka cluster of the same size would put it on.
func Partition(group string, partitions int32) int32 {
	var h int32
	for _, u := range utf16Units(group) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}
