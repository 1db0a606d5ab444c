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
	}
	var calls []call
	s := &Server{VerifyTxnPartition: func(_ context.Context, id string, pid int64, epoch int16, topic string, part int32) error {
		calls = append(calls, call{id, pid, epoch, topic, part})
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
		err := s.verifyTxnPartition(context.Background(), req, ref, batch(true))
		if code, _ := errorCode(err); code != c.want.Code {
			t.Fatalf("Produce v%d: %v, want %v", c.version, err, c.want)
		}
	}
	if err := s.verifyTxnPartition(context.Background(), req, ref, batch(false)); err != nil {
		t.Fatalf("an idempotent batch was verified: %v", err)
	}
	if len(calls) != 2 || calls[0] != (call{"tx", 42, 3, "t", 2}) {
		t.Fatalf("hook calls %+v", calls)
	}
	s.VerifyTxnPartition = nil
	if err := s.verifyTxnPartition(context.Background(), req, ref, batch(true)); errors.Is(err, kerr.TransactionAbortable) {
		t.Fatal("no hook, yet refused")
	}
}
