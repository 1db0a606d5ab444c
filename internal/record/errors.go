package record

import "errors"

// Sentinel errors about a record batch, one per Kafka error code. Errors
// returned by this package wrap them with context (fmt.Errorf("%w: ...")), so
// match with errors.Is and send err.Error() as the error message.
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
)
