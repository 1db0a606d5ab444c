package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
	"kbroker/internal/txn"
)

func transactionalBatch(t *testing.T, pid int64, transactional bool) []byte {
	t.Helper()
	b := record.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, 3, 0, transactional
	b.Add(1, nil, []byte("v"))
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The KIP-890 hook is asked once per Produce, for all its partitions, and
// its TRANSACTION_ABORTABLE reaches Produce v10 and older as
// INVALID_TXN_STATE; Produce v12+ adds the partitions (part 2) only when
// transaction.version 2 is finalized.
func TestProduceAsksTheVerificationHookOnceForAllPartitions(t *testing.T) {
	type call struct {
		id         string
		pid        int64
		epoch      int16
		partitions []txn.TopicPartition
		add        bool
	}
	var calls []call
	s := &Server{transactionVersion: 2, VerifyTxnPartitions: func(_ context.Context, id string, pid int64, epoch int16, partitions []txn.TopicPartition, add bool) []error {
		calls = append(calls, call{id, pid, epoch, partitions, add})
		errs := make([]error, len(partitions))
		errs[len(errs)-1] = kerr.TransactionAbortable
		return errs
	}}
	id := "tx"
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &id
	partitions := []txn.TopicPartition{{Topic: "t", Partition: 2}, {Topic: "u", Partition: 0}}
	for _, c := range []struct {
		version int16
		want    *kerr.Error
	}{{11, kerr.TransactionAbortable}, {10, kerr.InvalidTxnState}} {
		req.Version = c.version
		errs := s.askTxnCoordinator(context.Background(), req, 42, 3, partitions)
		if len(errs) != 2 || errs[0] != nil {
			t.Fatalf("Produce v%d: %v, want the first partition verified", c.version, errs)
		}
		if code, _ := errorCode(errs[1]); code != c.want.Code {
			t.Fatalf("Produce v%d: %v, want %v", c.version, errs[1], c.want)
		}
	}
	if len(calls) != 2 || calls[0].id != "tx" || calls[0].pid != 42 || calls[0].epoch != 3 || len(calls[0].partitions) != 2 || calls[0].add {
		t.Fatalf("hook calls %+v, want one per request with both partitions", calls)
	}
	for _, c := range []struct {
		version, tv int16
		add         bool
	}{{12, 2, true}, {13, 2, true}, {11, 2, false}, {12, 1, false}} {
		req.Version, s.transactionVersion = c.version, c.tv
		_ = s.askTxnCoordinator(context.Background(), req, 42, 3, partitions)
		if last := calls[len(calls)-1]; last.add != c.add {
			t.Fatalf("Produce v%d at transaction.version %d: add %v, want %v", c.version, c.tv, last.add, c.add)
		}
	}

	// Idempotent batches, and requests without a transactional id, are not
	// the coordinator's business.
	calls = nil
	targets := []produceTarget{{records: transactionalBatch(t, 42, false)}}
	s.verifyTxnTargets(context.Background(), req, targets)
	noID := kmsg.NewPtrProduceRequest()
	s.verifyTxnTargets(context.Background(), noID, []produceTarget{{records: transactionalBatch(t, 42, true)}})
	if len(calls) != 0 || targets[0].err != nil {
		t.Fatalf("hook calls %+v, error %v, for batches that need no verification", calls, targets[0].err)
	}
	// Two producers in one request: Kafka verifies one producer per
	// request, and refuses every partition.
	targets = []produceTarget{
		{records: transactionalBatch(t, 42, true)},
		{records: transactionalBatch(t, 43, true)},
		{records: transactionalBatch(t, 42, false)},
	}
	s.verifyTxnTargets(context.Background(), req, targets)
	for i, tg := range targets {
		if code, _ := errorCode(tg.err); code != kerr.InvalidProducerIDMapping.Code || !errors.Is(tg.err, kerr.InvalidProducerIDMapping) {
			t.Fatalf("partition %d of a request with two producers: %v, want INVALID_PRODUCER_ID_MAPPING", i, tg.err)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("hook calls %+v for a refused request", calls)
	}
}

// A failed verification reaches the producer as Kafka's ReplicaManager
// answers it: coordinator errors (and, unless the coordinator was adding
// the partition, CONCURRENT_TRANSACTIONS) as NOT_ENOUGH_REPLICAS naming
// the underlying error, INVALID_TXN_STATE as "Partition was not added to
// the transaction", the rest as they are.
func TestVerificationErrorsAreRewrittenAsKafkas(t *testing.T) {
	const unable = "Unable to verify the partition has been added to the transaction. Underlying error: "
	for _, c := range []struct {
		err     error
		version int16
		add     bool
		want    *kerr.Error
		msg     string
	}{
		{kerr.CoordinatorNotAvailable, 12, true, kerr.NotEnoughReplicas, unable + "COORDINATOR_NOT_AVAILABLE"},
		{kerr.NotCoordinator, 11, false, kerr.NotEnoughReplicas, unable + "NOT_COORDINATOR"},
		{kerr.CoordinatorLoadInProgress, 9, false, kerr.NotEnoughReplicas, unable + "COORDINATOR_LOAD_IN_PROGRESS"},
		{fmt.Errorf("%w: asking broker 2: dial refused", kerr.NetworkException), 12, true, kerr.NotEnoughReplicas, unable + "NETWORK_EXCEPTION"},
		{kerr.ConcurrentTransactions, 11, false, kerr.NotEnoughReplicas, unable + "CONCURRENT_TRANSACTIONS"},
		{kerr.ConcurrentTransactions, 12, true, kerr.ConcurrentTransactions, ""},
		{kerr.InvalidTxnState, 11, false, kerr.InvalidTxnState, "Partition was not added to the transaction"},
		{kerr.TransactionAbortable, 10, false, kerr.InvalidTxnState, "Partition was not added to the transaction"},
		{kerr.TransactionAbortable, 11, false, kerr.TransactionAbortable, ""},
		{kerr.InvalidProducerEpoch, 12, true, kerr.InvalidProducerEpoch, ""},
	} {
		got := verificationError(c.err, c.version, c.add)
		code, msg := errorCode(got)
		if code != c.want.Code || c.msg != "" && *msg != c.msg {
			t.Errorf("%v on Produce v%d (add %v): %d %q, want %v %q", c.err, c.version, c.add, code, *msg, c.want, c.msg)
		}
	}
}

// A failed verification reaches a TxnOffsetCommit as Kafka's group
// coordinator answers it, not as a Produce: NETWORK_EXCEPTION as
// COORDINATOR_LOAD_IN_PROGRESS, storage and timeout errors as the
// coordinator errors, TRANSACTION_ABORTABLE as INVALID_TXN_STATE before
// v5, and CONCURRENT_TRANSACTIONS (which every client retries on a
// TxnOffsetCommit) as it is, never NOT_ENOUGH_REPLICAS.
func TestTxnOffsetCommitVerificationErrorsAreMappedAsKafkas(t *testing.T) {
	for _, c := range []struct {
		err     error
		version int16
		want    *kerr.Error
	}{
		{fmt.Errorf("%w: asking broker 2: dial refused", kerr.NetworkException), 5, kerr.CoordinatorLoadInProgress},
		{kerr.NetworkException, 3, kerr.CoordinatorLoadInProgress},
		{kerr.NotEnoughReplicas, 5, kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, 4, kerr.CoordinatorNotAvailable},
		{context.DeadlineExceeded, 5, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, 5, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, 5, kerr.NotCoordinator},
		{kerr.KafkaStorageError, 5, kerr.NotCoordinator},
		{kerr.MessageTooLarge, 5, kerr.UnknownServerError},
		{kerr.CoordinatorNotAvailable, 5, kerr.CoordinatorNotAvailable},
		{kerr.NotCoordinator, 4, kerr.NotCoordinator},
		{kerr.CoordinatorLoadInProgress, 5, kerr.CoordinatorLoadInProgress},
		{kerr.ConcurrentTransactions, 5, kerr.ConcurrentTransactions},
		{kerr.ConcurrentTransactions, 2, kerr.ConcurrentTransactions},
		{kerr.TransactionAbortable, 4, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 5, kerr.TransactionAbortable},
		{kerr.InvalidTxnState, 5, kerr.InvalidTxnState},
		{kerr.InvalidProducerEpoch, 5, kerr.InvalidProducerEpoch},
	} {
		if got := txnOffsetVerificationCode(c.err, c.version); got != c.want.Code {
			t.Errorf("%v on TxnOffsetCommit v%d: %v, want %v", c.err, c.version, kerr.ErrorForCode(got), c.want)
		}
	}
	if got := txnOffsetVerificationCode(nil, 5); got != 0 {
		t.Errorf("a verified partition: %d, want 0", got)
	}
}
