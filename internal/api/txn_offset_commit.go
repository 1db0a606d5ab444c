package api

// TxnOffsetCommit (key 28), v0–v5.
//
// Commits a group's offsets inside the producer's transaction (KIP-98), at
// the group's coordinator: written to `__consumer_offsets` as a
// transactional batch, pending until the transaction's marker (OffsetFetch
// with RequireStable answers UNSTABLE_OFFSET_COMMIT meanwhile). There is no
// top-level error: TRANSACTIONAL_ID WRITE, then GROUP READ, fail every
// partition; TOPIC READ and an unknown topic or partition fail their own.
// v3+ member id and generation are checked (KIP-447), so a zombie of an
// older generation is refused. Before the offsets are written the
// transaction coordinator checks that the group's offsets partition is in
// the transaction (KIP-890 part 1), and under TV2 (v5+) adds it (part 2:
// no AddOffsetsToTxn). v6 (topic ids) is not served.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := int16(0)
	switch {
	case !s.transactionalIDAllowed(c, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.groupReadAllowed(c, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	case !s.groupsServed():
		code = codeNoGroupCoordinator
	}
	if code != 0 {
		resp.Topics = group.TxnCommitErrors(req.Topics, code)
		return resp, nil
	}
	snap := s.Store.Snapshot()
	accepted := *req
	accepted.Topics = nil
	for _, t := range req.Topics {
		code, ok, unknown := commitTopic(s, c, snap, t.Topic, t.Partitions, func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
		if code != 0 {
			resp.Topics = append(resp.Topics, group.TxnCommitErrors([]kmsg.TxnOffsetCommitRequestTopic{t}, code)...)
			continue
		}
		if len(unknown) > 0 {
			u := t
			u.Partitions = unknown
			resp.Topics = append(resp.Topics, group.TxnCommitErrors([]kmsg.TxnOffsetCommitRequestTopic{u}, kerr.UnknownTopicOrPartition.Code)...)
		}
		if len(ok) > 0 {
			t.Partitions = ok
			accepted.Topics = append(accepted.Topics, t)
		}
	}
	if len(accepted.Topics) > 0 {
		if code := s.verifyTxnOffsets(ctx, snap, req); code != 0 {
			resp.Topics = append(group.TxnCommitErrors(accepted.Topics, code), resp.Topics...)
			return resp, nil
		}
		resp.Topics = append(s.Groups.TxnCommit(ctx, &accepted), resp.Topics...)
	}
	return resp, nil
}

// verifyTxnOffsets is KIP-890 for TxnOffsetCommit: the group's offsets
// partition must be in the producer's transaction before its offsets are
// written (part 1; AddOffsetsToTxn put it there), and under TV2
// (transaction.version 2, v5+) the coordinator adds it itself, clients
// sending no AddOffsetsToTxn (part 2). The code answers every partition.
func (s *Server) verifyTxnOffsets(ctx context.Context, snap *meta.Snapshot, req *kmsg.TxnOffsetCommitRequest) int16 {
	offsets := snap.Topic(group.Topic)
	if s.VerifyTxnPartitions == nil || offsets == nil {
		return 0
	}
	add := req.Version >= 5 && s.transactionVersion >= 2
	partition := txn.TopicPartition{Topic: group.Topic, Partition: group.Partition(req.Group, offsets.Partitions)}
	var err error = kerr.UnknownServerError // a hook that answered nothing
	if errs := s.VerifyTxnPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{partition}, add); len(errs) > 0 {
		err = errs[0]
	}
	return txnOffsetVerificationCode(err, req.Version)
}

// txnOffsetVerificationCode is the code a TxnOffsetCommit gets for a
// failed verification, as Kafka's group coordinator answers it (the
// verification error passes through CoordinatorOperationExceptionHelper,
// unlike Produce's, which ReplicaManager rewrites to NOT_ENOUGH_REPLICAS):
// TRANSACTION_ABORTABLE reaches v4 and older as INVALID_TXN_STATE, which
// they know (AddPartitionsToTxnManager); NETWORK_EXCEPTION, which older
// clients may not retry, becomes COORDINATOR_LOAD_IN_PROGRESS, which all
// retry without looking the coordinator up again; the storage and
// timeout errors become the coordinator errors Kafka maps them to. The
// rest (CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_EPOCH, ...) pass as
// they are.
func txnOffsetVerificationCode(err error, version int16) int16 {
	if err == nil {
		return 0
	}
	if version < 5 && errors.Is(err, kerr.TransactionAbortable) {
		return kerr.InvalidTxnState.Code
	}
	code, _ := errorCode(err)
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}
