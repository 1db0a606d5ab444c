package storage

import "errors"

// Sentinel errors, one per Kafka error code the Produce/Fetch/ListOffsets handlers
// report. Errors returned by this package wrap them with context
// (fmt.Errorf("%w: ...")), so match with errors.Is and send err.Error() as the
// error message.
var (
	// ErrCorruptMessage is CORRUPT_MESSAGE (2): bad CRC, a length field that does not
	// match the bytes, or records that do not parse.
	ErrCorruptMessage = errors.New("corrupt message")
	// ErrInvalidRecord is INVALID_RECORD (87): a well-formed batch Kafka refuses from a
	// client (magic < 2, non-zero base offset, count/offset-delta mismatch, control or
	// transactional batch, negative sequence, more than one batch).
	ErrInvalidRecord = errors.New("invalid record")
	// ErrMessageTooLarge is MESSAGE_TOO_LARGE (10): batch larger than max.message.bytes.
	ErrMessageTooLarge = errors.New("message too large")
	// ErrRecordListTooLarge is RECORD_LIST_TOO_LARGE (18): batch larger than segment.bytes.
	ErrRecordListTooLarge = errors.New("record batch larger than the segment size")
	// ErrUnsupportedCompressionType is UNSUPPORTED_COMPRESSION_TYPE (76): codec id > 4.
	ErrUnsupportedCompressionType = errors.New("unsupported compression type")
	// ErrInvalidTimestamp is INVALID_TIMESTAMP (32).
	ErrInvalidTimestamp = errors.New("invalid timestamp")
	// ErrOffsetOutOfRange is OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrOutOfOrderSequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch is INVALID_PRODUCER_EPOCH (47).
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrUnknownProducerID is UNKNOWN_PRODUCER_ID (59). Kafka 4 no longer returns it on
	// produce (an unknown producer may start at any sequence, see producer.go); it is
	// kept so the handler's error table is complete.
	ErrUnknownProducerID = errors.New("unknown producer id")
	// ErrStorage is KAFKA_STORAGE_ERROR (56): an I/O failure on the log directory.
	ErrStorage = errors.New("storage error")
	// ErrClosed is returned by every method of a closed Log (the handler should treat
	// it like NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION: the partition went away).
	ErrClosed = errors.New("log closed")
)
