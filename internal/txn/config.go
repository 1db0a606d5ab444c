package txn

import (
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/group"
)

// Config holds the broker settings the transaction coordinator applies.
type Config struct {
	// Partitions is transaction.state.log.num.partitions.
	Partitions int32
	// MaxTimeout is transaction.max.timeout.ms: a longer timeout asked in
	// InitProducerId is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id idle (no
	// transaction open) that long is removed.
	IDExpiration time.Duration
	// AbortCheck is transaction.abort.timed.out.transaction.cleanup.interval.ms,
	// ExpirationCheck transaction.remove.expired.transaction.cleanup.interval.ms.
	AbortCheck, ExpirationCheck time.Duration
	// SegmentBytes is transaction.state.log.segment.bytes, the topic's
	// segment.bytes.
	SegmentBytes string
}

// ConfigFrom reads the coordinator settings from the broker's static
// configuration.
func ConfigFrom(l config.Layers) Config {
	num := func(name string) int64 { n, _ := strconv.ParseInt(config.BrokerValue(name, l), 10, 64); return n }
	ms := func(name string) time.Duration { return time.Duration(num(name)) * time.Millisecond }
	return Config{
		Partitions:      int32(num("transaction.state.log.num.partitions")),
		MaxTimeout:      ms("transaction.max.timeout.ms"),
		IDExpiration:    ms("transactional.id.expiration.ms"),
		AbortCheck:      ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		ExpirationCheck: ms("transaction.remove.expired.transaction.cleanup.interval.ms"),
		SegmentBytes:    config.BrokerValue("transaction.state.log.segment.bytes", l),
	}
}

// Partition is the `__transaction_state` partition of a transactional id:
// the same hash Kafka uses for groups (abs(hashCode) % partitions).
func Partition(transactionalID string, partitions int32) int32 {
	return group.Partition(transactionalID, partitions)
}
