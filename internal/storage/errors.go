package storage

import "errors"

// Sentinel errors, one per Kafka error code the Produce/Fetch/ListOffsets handlers
// report; those about a batch itself (corrupt, invalid, too large, bad
// timestamp or codec) are record's. Errors returned by this package wrap them with context
// (fmt.Errorf("%w: ...")), so match with errors.Is and send err.Error() as the
// error message.
var (
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

// ErrUnexpectedAppendOffset is returned by AppendAsFollower for batches that
// do not continue the log: a first offset below the log end offset (an
// overlap; Kafka's UnexpectedAppendOffsetException, which the follower treats
// as a reason to truncate and fetch again) or offsets that do not increase
// from batch to batch (Kafka's OffsetsOutOfOrderException). Kafka has no
// error code for either: UNKNOWN_SERVER_ERROR, should one ever reach the wire.
var ErrUnexpectedAppendOffset = errors.New("batches do not continue the log")

// Transaction refusals of the log (Kafka's ProducerAppendInfo).
var (
	// ErrInvalidTxnState is INVALID_TXN_STATE (48): a non-transactional batch
	// from a producer whose transaction is ongoing in the partition.
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTransactionCoordinatorFenced is TRANSACTION_COORDINATOR_FENCED (52):
	// a marker from a coordinator epoch older than the last one seen.
	ErrTransactionCoordinatorFenced = errors.New("transaction coordinator fenced")
)
