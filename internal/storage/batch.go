package storage

import (
	"math"
	"time"

	"kbroker/internal/record"
)

// produceRules are the checks the topic's config asks of a produced batch.
func (c *Config) produceRules(now time.Time) record.ProduceRules {
	nowMs := now.UnixMilli()
	return record.ProduceRules{
		MaxBatchBytes:   int64(c.MaxMessageBytes),
		MaxSegmentBytes: c.SegmentBytes,
		CreateTime:      c.TimestampType == CreateTime,
		// Kafka's CreateTime check: at most message.timestamp.before.max.ms older and
		// message.timestamp.after.max.ms newer than the broker clock. The bounds
		// saturate so that extreme settings cannot overflow into a narrower range.
		MinTimestamp: satSub(nowMs, c.TimestampBeforeMaxMs),
		MaxTimestamp: satAdd(nowMs, c.TimestampAfterMaxMs),
		RequireKeys:  c.CleanupPolicy.Compact,
	}
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
