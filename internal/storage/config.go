package storage

import (
	"math"
	"time"

	"kbroker/internal/record"
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

// CleanupPolicy is cleanup.policy: which of retention (delete) and log
// compaction (compact) apply. Both may be set; neither (an empty list) keeps
// everything.
type CleanupPolicy struct {
	Delete  bool
	Compact bool
}

// CompressionType is compression.type: what codec the broker stores batches in.
type CompressionType int8

const (
	// CompressionProducer keeps each batch in the codec the producer chose.
	CompressionProducer CompressionType = iota
	CompressionUncompressed
	CompressionGzip
	CompressionSnappy
	CompressionLz4
	CompressionZstd
)

// codec is the batch attribute codec id the type stores batches with; -1 for
// CompressionProducer (keep the batch's own).
func (c CompressionType) codec() record.Codec {
	switch c {
	case CompressionUncompressed:
		return record.CodecNone
	case CompressionGzip:
		return record.CodecGzip
	case CompressionSnappy:
		return record.CodecSnappy
	case CompressionLz4:
		return record.CodecLz4
	case CompressionZstd:
		return record.CodecZstd
	}
	return -1
}

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

	CleanupPolicy          CleanupPolicy // cleanup.policy (default delete)
	MinCleanableDirtyRatio float64       // min.cleanable.dirty.ratio (0.5): clean when dirty bytes / cleanable bytes exceed it
	MinCompactionLagMs     int64         // min.compaction.lag.ms (0): records younger than this stay uncompacted
	MaxCompactionLagMs     int64         // max.compaction.lag.ms (Long.MAX): dirty records older than this force a clean
	DeleteRetentionMs      int64         // delete.retention.ms (1 day): how long compaction keeps tombstones

	CompressionType CompressionType // compression.type (default producer)
	GzipLevel       int             // compression.gzip.level (-1: the codec's default)
	Lz4Level        int             // compression.lz4.level (9)
	ZstdLevel       int             // compression.zstd.level (3)

	// ProducerIDExpirationMs is producer.id.expiration.ms (1 day): idempotent
	// producer state idle for longer is dropped when retention runs.
	ProducerIDExpirationMs int64

	// FlushMessages is flush.messages: the active segment is fsynced once this
	// many messages (offsets) were appended since the last flush. Kafka's
	// default, Long.MAX, never forces one: durability comes from replication
	// and the OS page cache, segments being synced when rolled and on close.
	FlushMessages int64
	// FlushMs is flush.ms: a log not flushed for this long is flushed by the
	// Manager's periodic check (Manager.FlushCheckIntervalMs, Kafka's
	// log.flush.scheduler.interval.ms). Default Long.MAX: never.
	FlushMs int64
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

		CleanupPolicy:          CleanupPolicy{Delete: true},
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      86400000,

		CompressionType: CompressionProducer,
		GzipLevel:       -1,
		Lz4Level:        9,
		ZstdLevel:       3,

		ProducerIDExpirationMs: 86400000,

		FlushMessages: math.MaxInt64,
		FlushMs:       math.MaxInt64,
	}
}

// levelFor is the topic's configured level of codec.
func (c *Config) levelFor(codec record.Codec) int {
	switch codec {
	case record.CodecGzip:
		return c.GzipLevel
	case record.CodecLz4:
		return c.Lz4Level
	case record.CodecZstd:
		return c.ZstdLevel
	}
	return 0
}

// rollMs is how old the active segment may get before it is rolled: Kafka's
// LogConfig.maxSegmentMs also rolls a compacted log by max.compaction.lag.ms, since
// the cleaner never touches the active segment.
func (c *Config) rollMs() int64 {
	if c.CleanupPolicy.Compact && c.MaxCompactionLagMs > 0 {
		return min(c.MaxCompactionLagMs, c.SegmentMs)
	}
	return c.SegmentMs
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
	if !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1) { // NaN too
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	c.MinCompactionLagMs = max(c.MinCompactionLagMs, 0)
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.CompressionType < CompressionProducer || c.CompressionType > CompressionZstd {
		c.CompressionType = d.CompressionType
	}
	if c.GzipLevel != -1 && (c.GzipLevel < 1 || c.GzipLevel > 9) {
		c.GzipLevel = d.GzipLevel
	}
	if c.Lz4Level < 1 || c.Lz4Level > 17 {
		c.Lz4Level = d.Lz4Level
	}
	if c.ZstdLevel < -131072 || c.ZstdLevel > 22 {
		c.ZstdLevel = d.ZstdLevel
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	// Kafka's ranges: flush.messages at least 1, flush.ms at least 0.
	if c.FlushMessages < 1 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs < 0 {
		c.FlushMs = d.FlushMs
	}
	return c
}
