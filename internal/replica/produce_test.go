package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"kbroker/internal/record"
	"kbroker/internal/storage"
)

// Acks other than -1, 0 and 1 are refused; appended bytes are counted
// under their topic; a failed acks=0 request ends in ErrAcksZeroFailed.
func TestProducerChecksAcksAndCountsBytesIn(t *testing.T) {
	for _, acks := range []int16{-1, 0, 1} {
		if err := CheckAcks(acks); err != nil {
			t.Errorf("acks=%d: %v", acks, err)
		}
	}
	if err := CheckAcks(5); !errors.Is(err, ErrInvalidRequiredAcks) {
		t.Errorf("acks=5: %v, want ErrInvalidRequiredAcks", err)
	}
	if AcksZeroOutcome(false) != nil || !errors.Is(AcksZeroOutcome(true), ErrAcksZeroFailed) {
		t.Error("acks=0 outcome: want nil without a failure, ErrAcksZeroFailed with one")
	}

	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1})
	pt, err := p.Lead(store.Snapshot(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	bytesIn := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bytes_in"}, []string{"topic"})
	producer := NewProducer(p, bytesIn)
	b := record.NewBuilder()
	b.Add(1000, nil, []byte("v"))
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := producer.Append(store.Snapshot(), pt, 1, batch, time.Now(), storage.NoGuard)
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("append: %+v, %v", res, err)
	}
	var got dto.Metric
	if err := bytesIn.WithLabelValues("t").Write(&got); err != nil {
		t.Fatal(err)
	}
	if got.GetCounter().GetValue() != float64(len(batch)) {
		t.Errorf("bytes in = %v, want %d", got.GetCounter().GetValue(), len(batch))
	}
}
