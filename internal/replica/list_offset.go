package replica

import "errors"

// The special timestamps of ListOffsets: below zero, a timestamp names a
// position in the log instead of a time.
const (
	OffsetLatest        = -1 // the high watermark, or the last stable offset for read_committed
	OffsetEarliest      = -2 // the log start
	OffsetMaxTimestamp  = -3 // the record with the largest timestamp (ListOffsets v7+, KIP-734)
	OffsetEarliestLocal = -4 // the earliest offset on local storage (v8+): the log start without tiered storage
	OffsetLatestTiered  = -5 // the latest offset in tiered storage (v9+): none without tiered storage
)

// ErrUnknownSpecialTimestamp: a ListOffsets timestamp below zero that names
// no position (INVALID_REQUEST).
var ErrUnknownSpecialTimestamp = errors.New("unknown special timestamp")

// ListOffset is the offset ListOffsets answers for timestamp ts, and the
// timestamp of its record where the rule finds one (-1 otherwise): for
// ts ≥ 0 the first record whose timestamp is at least ts, or -1 and -1
// when there is none (or when that record is at or past the high
// watermark, or for readCommitted the last stable offset); for a special
// timestamp the position it names.
func (pt *Partition) ListOffset(ts int64, readCommitted bool) (offset, timestamp int64, err error) {
	switch ts {
	case OffsetLatest:
		if readCommitted {
			return pt.LastStableOffset(), -1, nil
		}
		return pt.HighWatermark(), -1, nil
	case OffsetEarliest, OffsetEarliestLocal:
		return pt.LogStartOffset(), -1, nil
	case OffsetMaxTimestamp:
		return pt.MaxTimestamp()
	case OffsetLatestTiered:
		return -1, -1, nil // no tiered storage: nothing is tiered
	}
	if ts < 0 {
		return -1, -1, ErrUnknownSpecialTimestamp
	}
	offset, timestamp, ok, err := pt.OffsetForTimestamp(ts)
	if err != nil || !ok {
		return -1, -1, err
	}
	// As Kafka's fetchOffsetForTimestamp: a record a consumer of that
	// isolation level may not read yet is no answer.
	fetchable := pt.HighWatermark()
	if readCommitted {
		fetchable = pt.LastStableOffset()
	}
	if offset >= fetchable {
		return -1, -1, nil
	}
	return offset, timestamp, nil
}
