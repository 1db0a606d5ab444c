package api

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
)

// The KIP-890 hook is asked about transactional batches only, with the
// batch's producer, and its TRANSACTION_ABORTABLE reaches Produce v10 and
// older as INVALID_TXN_STATE.
func TestProduceAsksTheVerificationHookForTransactionalBatches(t *testing.T) {
	type call struct {
		id    string
		pid   int64
		epoch int16
		topic string
		part  int32
		add   bool
	}
	var calls []call
	s := &Server{transactionVersion: 2, VerifyTxnPartition: func(_ context.Context, id string, pid int64, epoch int16, topic string, part int32, add bool) error {
		calls = append(calls, call{id, pid, epoch, topic, part, add})
		return kerr.TransactionAbortable
	}}
	batch := func(transactional bool) []byte {
		b := record.NewBuilder()
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = 42, 3, 0, transactional
		b.Add(1, nil, []byte("v"))
		raw, _ := b.Build()
		return raw
	}
	id := "tx"
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &id
	ref := partitionRef{name: "t", partition: 2}
	for _, c := range []struct {
		version int16
		want    *kerr.Error
	}{{11, kerr.TransactionAbortable}, {10, kerr.InvalidTxnState}} {
		req.Version = c.version
		_, err := s.verifyTxnPartition(context.Background(), req, ref.name, ref.partition, batch(true), nil)
		if code, _ := errorCode(err); code != c.want.Code {
			t.Fatalf("Produce v%d: %v, want %v", c.version, err, c.want)
		}
	}
	if _, err := s.verifyTxnPartition(context.Background(), req, ref.name, ref.partition, batch(false), nil); err != nil {
		t.Fatalf("an idempotent batch was verified: %v", err)
	}
	if len(calls) != 2 || calls[0] != (call{"tx", 42, 3, "t", 2, false}) {
		t.Fatalf("hook calls %+v", calls)
	}
	// KIP-890 part 2: Produce v12+ adds the partition, but only when
	// transaction.version 2 is finalized.
	calls = nil
	for _, c := range []struct {
		version, tv int16
		add         bool
	}{{12, 2, true}, {13, 2, true}, {11, 2, false}, {12, 1, false}} {
		req.Version, s.transactionVersion = c.version, c.tv
		_, _ = s.verifyTxnPartition(context.Background(), req, ref.name, ref.partition, batch(true), nil)
		if last := calls[len(calls)-1]; last.add != c.add {
			t.Fatalf("Produce v%d at transaction.version %d: add %v, want %v", c.version, c.tv, last.add, c.add)
		}
	}
	s.VerifyTxnPartition = nil
	if _, err := s.verifyTxnPartition(context.Background(), req, ref.name, ref.partition, batch(true), nil); errors.Is(err, kerr.TransactionAbortable) {
		t.Fatal("no hook, yet refused")
	}
}
