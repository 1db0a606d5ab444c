package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/auth"
	"kbroker/internal/controller"
	"kbroker/internal/coordinator"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/record"
	"kbroker/internal/replica"
	"kbroker/internal/scram"
	"kbroker/internal/storage"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

// errorTable maps the sentinel errors of kbroker's services to Kafka error
// codes. It is the one place where internal errors become wire errors: the
// services say what went wrong, never which Kafka code it is. Every
// exported Err* of a service package has a row (errors_test.go), or is
// listed there as one that never reaches a handler.
var errorTable = []struct {
	err  error
	kerr *kerr.Error
}{
	{record.ErrCorruptMessage, kerr.CorruptMessage},
	{record.ErrInvalidRecord, kerr.InvalidRecord},
	{record.ErrMessageTooLarge, kerr.MessageTooLarge},
	{record.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrUnknownProducerID, kerr.UnknownProducerID},
	{storage.ErrVerificationOvertaken, kerr.InvalidTxnState},
	{storage.ErrInvalidTxnState, kerr.InvalidTxnState},
	{storage.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{record.ErrRecordListTooLarge, kerr.RecordListTooLarge},
	{record.ErrUnsupportedCompressionType, kerr.UnsupportedCompressionType},
	// A log closed under a request: the partition is going away (topic
	// deleted, broker stopping); the client refreshes metadata and retries.
	{storage.ErrClosed, kerr.NotLeaderForPartition},
	// A follower's own check of what it fetched (Kafka has no code for it):
	// it never answers a client request.
	{storage.ErrUnexpectedAppendOffset, kerr.UnknownServerError},
	{replica.ErrNotLeader, kerr.NotLeaderForPartition},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{replica.ErrReplicationTimeout, kerr.RequestTimedOut},
	{replica.ErrDeleteRecordsTimeout, kerr.RequestTimedOut},
	{replica.ErrUnknownSpecialTimestamp, kerr.InvalidRequest},
	{replica.ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	// Closes the connection: no client reads the code.
	{replica.ErrAcksZeroFailed, kerr.UnknownServerError},
	// Work sent to a coordinator shard that has stopped (its partition
	// moved or the broker is closing): the client looks the coordinator up
	// again, as Kafka's NOT_COORDINATOR asks.
	{coordinator.ErrNotLoaded, kerr.NotCoordinator},
	// A coordinator's write to an internal-topic partition this broker no
	// longer leads. The group and transaction shards answer their own
	// requests NOT_COORDINATOR; a handler meets it only in WriteTxnMarkers
	// for a `__consumer_offsets` partition, which, as any partition's
	// leader, answers NOT_LEADER_OR_FOLLOWER so the sender looks it up
	// again.
	{coordinator.ErrNotLeader, kerr.NotLeaderForPartition},
	// A marker's partition was deleted (the transaction coordinator drops
	// it); the code WriteTxnMarkers answers for it.
	{txn.ErrPartitionGone, kerr.UnknownTopicOrPartition},
	{meta.ErrTopicExists, kerr.TopicAlreadyExists},
	{meta.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	// AlterPartition's refusals (partition state compare-and-swap).
	{meta.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{meta.ErrPartitionChanged, kerr.InvalidUpdateVersion},
	{meta.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{meta.ErrIneligibleReplica, kerr.IneligibleReplica},
	{meta.ErrInvalidPartitions, kerr.InvalidPartitions},
	{meta.ErrNoCredential, kerr.ResourceNotFound},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrCountsWithAssignment, kerr.InvalidRequest},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{controller.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{controller.ErrInvalidConfig, kerr.InvalidConfig},
	{controller.ErrPolicyViolation, kerr.PolicyViolation},
	{controller.ErrTopicBeingCreated, kerr.LeaderNotAvailable},
	{controller.ErrDuplicateTopic, kerr.InvalidRequest},
	{controller.ErrUnknownTopicID, kerr.UnknownTopicID},
	{controller.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{controller.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{controller.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
	{controller.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{auth.ErrUnknownScramMechanism, kerr.UnsupportedSaslMechanism},
	{auth.ErrEmptyUsername, kerr.UnacceptableCredential},
	{auth.ErrTooFewIterations, kerr.UnacceptableCredential},
	{auth.ErrTooManyIterations, kerr.UnacceptableCredential},
	{auth.ErrInvalidACL, kerr.InvalidRequest},
	{scram.ErrDuplicateUser, kerr.DuplicateResource},
	{scram.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{dynconfig.ErrInvalidConfig, kerr.InvalidConfig},
	{dynconfig.ErrInvalidRequest, kerr.InvalidRequest},
	{dynconfig.ErrPolicyViolation, kerr.PolicyViolation},
	{auth.ErrUnsupportedMechanism, kerr.UnsupportedSaslMechanism},
	{auth.ErrIllegalSaslState, kerr.IllegalSaslState},
	// The SASL state machine of the connection layer.
	{wire.ErrSASLState, kerr.IllegalSaslState},
	{wire.ErrSASLMechanism, kerr.UnsupportedSaslMechanism},
	{wire.ErrSASLAuthentication, kerr.SaslAuthenticationFailed},
	// A quota entity, key or value the quota package refuses.
	{quota.ErrInvalid, kerr.InvalidRequest},
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
