package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// errorTable maps the sentinel errors of kbroker's services to Kafka error
// codes. It is the one place where internal errors become wire errors.
var errorTable = []struct {
	err  error
	kerr *kerr.Error
}{
	{storage.ErrCorruptMessage, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrUnknownProducerID, kerr.UnknownProducerID},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{storage.ErrRecordListTooLarge, kerr.RecordListTooLarge},
	{storage.ErrUnsupportedCompressionType, kerr.UnsupportedCompressionType},
	// A log closed under a request: the partition is going away (topic
	// deleted, broker stopping); the client refreshes metadata and retries.
	{storage.ErrClosed, kerr.NotLeaderForPartition},
	{meta.ErrTopicExists, kerr.TopicAlreadyExists},
	{meta.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{meta.ErrInvalidPartitions, kerr.InvalidPartitions},
	{meta.ErrNoCredential, kerr.ResourceNotFound},
	{auth.ErrUnknownScramMechanism, kerr.UnsupportedSaslMechanism},
	{auth.ErrEmptyUsername, kerr.UnacceptableCredential},
	{auth.ErrTooFewIterations, kerr.UnacceptableCredential},
	{auth.ErrTooManyIterations, kerr.UnacceptableCredential},
	{auth.ErrInvalidACL, kerr.InvalidRequest},
	// The metadata store (etcd) unreachable or contended: the client retries.
	{meta.ErrUnavailable, kerr.RequestTimedOut},
	{meta.ErrConflict, kerr.RequestTimedOut},
	{meta.ErrTooLarge, kerr.InvalidRequest}, // over etcd's request size: no retry helps
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// errorCode returns the Kafka error code for err (0 for nil), and the
// message to send where the response has room for one.
func errorCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	msg := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code, &msg
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.kerr.Code, &msg
		}
	}
	return kerr.UnknownServerError.Code, &msg
}

// codeError is a Kafka error with a message of our own, for handlers that
// decide an error code directly.
type codeError struct {
	kerr *kerr.Error
	msg  string
}

func (e *codeError) Error() string { return e.msg }
func (e *codeError) Unwrap() error { return e.kerr }

// newError returns an error carrying code k and message msg.
func newError(k *kerr.Error, msg string) error { return &codeError{kerr: k, msg: msg} }

// errorIs reports whether err carries the Kafka error k.
func errorIs(err error, k *kerr.Error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && ke == k
}
