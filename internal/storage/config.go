package storage

import (
	"math"
	"time"
)

// TimestampType is message.timestamp.type.
type TimestampType int8

const (
	// CreateTime keeps the producer's timestamps (validated against
	// message.timestamp.before/after.max.ms).
	CreateTime TimestampType = 0
	// LogAppendTime overwrites the batch's max timestamp with the broker clock.
	LogAppendTime TimestampType = 1
)

// Config is one partition log's settings, taken from the topic's effective configs.
type Config struct {
	SegmentBytes         int64         // segment.bytes (default 1 GiB)
	SegmentMs            int64         // segment.ms (default 7 days): roll when the active segment's first batch is older
	RetentionMs          int64         // retention.ms; -1 = keep forever
	RetentionBytes       int64         // retention.bytes; -1 = unlimited
	IndexIntervalBytes   int32         // index.interval.bytes (4096)
	SegmentIndexBytes    int32         // segment.index.bytes (10 MiB): max index size, roll when full
	MaxMessageBytes      int32         // max.message.bytes (1048588): a batch larger than this -> ErrMessageTooLarge
	TimestampType        TimestampType // CreateTime (default) or LogAppendTime (message.timestamp.type)
	TimestampBeforeMaxMs int64         // message.timestamp.before.max.ms (Long.MAX default)
	TimestampAfterMaxMs  int64         // message.timestamp.after.max.ms (Kafka 4 default 3600000)
}

// DefaultConfig returns Kafka 4's topic defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:         1 << 30,
		SegmentMs:            int64(7 * 24 * time.Hour / time.Millisecond),
		RetentionMs:          int64(7 * 24 * time.Hour / time.Millisecond),
		RetentionBytes:       -1,
		IndexIntervalBytes:   4096,
		SegmentIndexBytes:    10 << 20,
		MaxMessageBytes:      1048588,
		TimestampType:        CreateTime,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  3600000,
	}
}

// normalized clamps values a topic config validator should already have rejected,
// so that a bad value can never make the log misbehave (e.g. a segment position
// overflowing the int32 an index entry holds).
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	// segment.bytes is an INT in Kafka; index positions are int32.
	if c.SegmentBytes > math.MaxInt32 {
		c.SegmentBytes = math.MaxInt32
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentIndexBytes < offsetEntrySize {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.TimestampBeforeMaxMs < 0 {
		c.TimestampBeforeMaxMs = d.TimestampBeforeMaxMs
	}
	if c.TimestampAfterMaxMs < 0 {
		c.TimestampAfterMaxMs = d.TimestampAfterMaxMs
	}
	return c
}
