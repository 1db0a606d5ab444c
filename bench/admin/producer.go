package admin

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProducerSpec is B4: a greedy producer against producer_byte_rate.
type ProducerSpec struct {
	Addr, Topic, ClientID string
	RecordBytes           int
	Quota                 float64 // the producer_byte_rate already set on ClientID
	Duration              time.Duration
}

// ProducerAccuracy runs a greedy kgo producer for spec.Duration: acks=1,
// idempotence off (so kgo keeps one produce request in flight, as the
// simulation in internal/quota assumes), one record per request (the batch
// limit is set just above the record), a small buffer that is always full.
// kgo honours every throttle_time_ms in full before its next produce
// request (KIP-219), so the achieved rate is the broker's enforcement.
func ProducerAccuracy(ctx context.Context, spec ProducerSpec) (RateResult, error) {
	res := RateResult{Quota: spec.Quota}
	hook := newThrottleHook()
	batchMax := int32(spec.RecordBytes + 1024)
	if spec.RecordBytes > 1<<19 {
		batchMax = 1048588 // the broker's message.max.bytes default
	}
	cl, err := newClient(spec.Addr, spec.ClientID,
		kgo.DefaultProduceTopic(spec.Topic),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(batchMax),
		kgo.MaxBufferedRecords(8),
		kgo.WithHooks(hook),
	)
	if err != nil {
		return res, err
	}
	defer closeBounded(cl)
	value := make([]byte, spec.RecordBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}

	log := &eventLog{}
	var mu sync.Mutex
	pctx, cancel := context.WithTimeout(ctx, spec.Duration)
	defer cancel()
	start := time.Now()
	log.t0 = start
	hook.start(start)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			if pctx.Err() == nil { // failures after the end are the cancel
				mu.Lock()
				res.Errors++
				if res.FirstErr == "" {
					res.FirstErr = err.Error()
				}
				mu.Unlock()
			}
			return
		}
		log.add(len(r.Value))
	}
	for pctx.Err() == nil {
		cl.Produce(pctx, &kgo.Record{Value: value}, promise)
	}
	dur := time.Since(start)
	// Every produce request carries one record; the overhead is what the
	// requests written weighed per value byte.
	if written, nreq := hook.written(int16(kmsg.Produce)); nreq > 0 {
		res.Overhead = float64(written) / float64(nreq*int64(spec.RecordBytes))
	}
	events := log.snapshot()
	th := hook.stats()
	res.MaxThrottleMs = float64(th.max) / float64(time.Millisecond)
	res.Throttles = th.n
	summarizeRate(&res, events, dur, th.first)
	return res, nil
}
