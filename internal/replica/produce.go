package replica

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"kbroker/internal/meta"
	"kbroker/internal/refusal"
	"kbroker/internal/storage"
)

// Refusals of a produce request.
var (
	// ErrInvalidRequiredAcks: acks other than -1 (all in-sync replicas), 0
	// (no response) or 1 (the leader), refused for every partition.
	ErrInvalidRequiredAcks = errors.New("invalid required acks")
	// ErrAcksZeroFailed: a produce with acks=0 that failed on some
	// partition. There is no response to carry the error, so the broker
	// closes the connection and the client notices.
	ErrAcksZeroFailed = errors.New("produce with acks=0 failed")
)

// Producer is the leader's side of Produce: it checks acks, appends each
// partition's batch and counts the bytes produced per topic.
type Producer struct {
	partitions *Partitions
	bytesIn    *prometheus.CounterVec // by topic
}

// NewProducer appends through partitions, counting new record bytes in
// bytesIn (labelled by topic).
func NewProducer(partitions *Partitions, bytesIn *prometheus.CounterVec) *Producer {
	return &Producer{partitions: partitions, bytesIn: bytesIn}
}

// CheckAcks refuses acks Kafka does not know.
func CheckAcks(acks int16) error {
	if acks != 0 && acks != 1 && acks != -1 {
		return refusal.New(ErrInvalidRequiredAcks, "acks must be -1, 0 or 1")
	}
	return nil
}

// Append appends records to pt as its leader, waiting as acks says
// (Partition.AppendAsLeader, with the topic's min.insync.replicas). An
// idempotent producer's retried batch is answered with its original
// offsets and is not counted again. guard is the batch's verification
// guard (Partition.StartTxnVerification), storage.NoGuard for none.
func (p *Producer) Append(snap *meta.Snapshot, pt Partition, acks int16, records []byte, now time.Time, guard storage.VerificationGuard) (storage.AppendResult, error) {
	res, err := pt.AppendVerifiedAsLeader(records, now, acks, p.partitions.MinInsyncReplicas(snap, pt.Topic), guard)
	if err != nil {
		return res, err
	}
	if !res.Duplicate {
		p.bytesIn.WithLabelValues(pt.Topic).Add(float64(len(records)))
	}
	return res, nil
}

// AcksZeroOutcome is what an acks=0 request ends with, given whether any
// partition failed: nothing (no response is sent), or ErrAcksZeroFailed
// to close the connection.
func AcksZeroOutcome(failed bool) error {
	if failed {
		return refusal.New(ErrAcksZeroFailed, "produce with acks=0 failed; closing the connection so the client notices")
	}
	return nil
}
