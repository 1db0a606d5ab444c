package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Preload produces total value bytes of recordBytes records into topic
// (client-id kbench-preload, not quota'd), in batches of at most batchBytes.
func Preload(ctx context.Context, addr, topic string, recordBytes, batchBytes int, total int64) error {
	cl, err := newClient(addr, "kbench-preload",
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(int32(batchBytes+1024)),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	value := make([]byte, recordBytes)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var firstErr error
	errc := make(chan error, 1)
	for n := int64(0); n < total; n += int64(recordBytes) {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	select {
	case firstErr = <-errc:
	default:
	}
	if firstErr != nil {
		return fmt.Errorf("preload: %w", firstErr)
	}
	return nil
}

// ConsumerSpec is B5: a greedy consumer against consumer_byte_rate.
type ConsumerSpec struct {
	Addr, Topic, ClientID string
	Quota                 float64
	Duration              time.Duration
}

// batchHook adds up the record batch bytes a consumer is given.
type batchHook struct {
	*throttleHook
	batchBytes int64
}

func (h *batchHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	h.batchBytes += int64(m.CompressedBytes)
	h.mu.Unlock()
}

// ConsumerAccuracy reads spec.Topic partition 0 from the start for
// spec.Duration with a kgo consumer whose own fetch limits are far above the
// quota, so the broker's quota (cap per response, throttles) is the limit.
func ConsumerAccuracy(ctx context.Context, spec ConsumerSpec) (RateResult, error) {
	res := RateResult{Quota: spec.Quota}
	hook := &batchHook{throttleHook: newThrottleHook()}
	cl, err := newClient(spec.Addr, spec.ClientID,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(50<<20),
		kgo.WithHooks(hook),
	)
	if err != nil {
		return res, err
	}
	defer closeBounded(cl)
	log := &eventLog{}
	start := time.Now()
	log.t0 = start
	hook.start(start)
	pctx, cancel := context.WithTimeout(ctx, spec.Duration)
	defer cancel()
	var value int64
	for pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		if pctx.Err() != nil {
			break
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) { n += len(r.Value) })
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				res.Errors++
				if res.FirstErr == "" {
					res.FirstErr = err.Error()
				}
			}
		})
		if n > 0 {
			log.add(n)
			value += int64(n)
		}
	}
	dur := time.Since(start)
	hook.mu.Lock()
	if value > 0 {
		res.Overhead = float64(hook.batchBytes) / float64(value)
	}
	hook.mu.Unlock()
	th := hook.stats()
	res.MaxThrottleMs = float64(th.max) / float64(time.Millisecond)
	res.Throttles = th.n
	summarizeRate(&res, log.snapshot(), dur, th.first)
	if res.Requests == 0 {
		return res, fmt.Errorf("consumer received nothing in %s (%s)", spec.Duration, res.FirstErr)
	}
	return res, nil
}

// StarvationSpec is B5's KAFKA-9677 case: a tiny consumer quota and a small
// partition fetch size must still deliver records.
type StarvationSpec struct {
	Addr, Topic, ClientID string
	Quota                 float64
	PartitionMaxBytes     int32
	ValueBytes, Records   int
	Limit                 time.Duration // give up after this long without a record
	After                 time.Duration // stop this long after the first record
}

// StarvationResult is what the starvation case saw.
type StarvationResult struct {
	Spec           StarvationSpec
	BatchBytes     int           // bytes of one preloaded batch
	FirstRecord    time.Duration // since the first fetch; −1 if none arrived
	Records, Bytes int
	RateAfterFirst float64 // batch bytes/s after the first response with records
	MaxResponse    int     // largest batch bytes in one response
	Responses      int     // responses with records
	Throttled      int     // responses with throttle > 0
	MaxThrottleMs  float64
}

// Starvation preloads spec.Records records (one per batch) with a client
// that has no quota, sets consumer_byte_rate on spec.ClientID, then fetches
// with raw Fetch requests so each response's batch bytes are seen exactly.
// kgo's Request path still honours throttle_time_ms before the next request
// on the connection, as a kgo consumer would.
func Starvation(ctx context.Context, spec StarvationSpec) (StarvationResult, error) {
	res := StarvationResult{Spec: spec, FirstRecord: -1}
	pcl, err := newClient(spec.Addr, "kbench-preload", kgo.DefaultProduceTopic(spec.Topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return res, err
	}
	value := make([]byte, spec.ValueBytes)
	for range spec.Records {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			closeBounded(pcl)
			return res, fmt.Errorf("preload: %w", err)
		}
	}
	closeBounded(pcl)
	res.BatchBytes = len(recordBatch(value, 1, time.Now()))
	if err := SetQuotas(ctx, spec.Addr, Quota{"client-id", spec.ClientID, "consumer_byte_rate", spec.Quota}); err != nil {
		return res, err
	}

	cl, err := newClient(spec.Addr, spec.ClientID)
	if err != nil {
		return res, err
	}
	defer closeBounded(cl)
	// Fetch v13+ names topics by id.
	td, err := kadm.NewClient(cl).ListTopics(ctx, spec.Topic)
	if err != nil {
		return res, err
	}
	topicID := td[spec.Topic].ID
	start := time.Now()
	var offset int64
	var firstAt time.Time
	var bytesAfterFirst int
	var lastAt time.Time
	for {
		now := time.Since(start)
		if res.FirstRecord < 0 && now > spec.Limit {
			break
		}
		if res.FirstRecord >= 0 && now > res.FirstRecord+spec.After {
			break
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 50 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = spec.Topic
		rt.TopicID = topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = spec.PartitionMaxBytes
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		kr, err := req.RequestWith(rctx, cl)
		cancel()
		if err != nil {
			return res, fmt.Errorf("fetch: %w", err)
		}
		if kr.ThrottleMillis > 0 {
			res.Throttled++
			res.MaxThrottleMs = math.Max(res.MaxThrottleMs, float64(kr.ThrottleMillis))
		}
		got := 0
		for _, t := range kr.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return res, fmt.Errorf("fetch partition error code %d", p.ErrorCode)
				}
				bs := summarizeBatches(p.RecordBatches)
				if bs.Batches == 0 {
					continue
				}
				got += bs.Bytes
				res.Records += bs.Records
				res.Bytes += bs.Bytes
				offset = bs.NextOffset
			}
		}
		if got > 0 {
			res.Responses++
			res.MaxResponse = max(res.MaxResponse, got)
			if res.FirstRecord < 0 {
				res.FirstRecord = time.Since(start)
				firstAt = time.Now()
			} else {
				bytesAfterFirst += got
				lastAt = time.Now()
			}
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	if !lastAt.IsZero() {
		res.RateAfterFirst = float64(bytesAfterFirst) / lastAt.Sub(firstAt).Seconds()
	}
	return res, nil
}
