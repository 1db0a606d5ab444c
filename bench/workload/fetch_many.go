package workload

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FetchMany is B2m: what a fetch costs a consumer of many partitions that
// each get a little new data, the case fetch sessions (KIP-227) are for.
// Rounds rounds of one record per partition are written first, each
// record its own batch (not measured); then one consumer reads every
// partition from offset 0 with FetchMaxBytes of a few batches, so each
// fetch finds new data in a handful of partitions and none in the rest. It
// counts the Fetch requests it sends, their bytes on the wire and the
// response bytes, after a warm-up of as many records as partitions, and
// checks that every record arrives once, in order.
func FetchMany(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	parts := max(spec.Partitions, 1)
	preload, err := preloadRounds(ctx, spec, parts)
	if err != nil {
		return Result{}, fmt.Errorf("preload: %w", err)
	}
	runtime.GC()
	// Let the broker finish what the preload left it (flushes, fsyncs of
	// 1,000 logs) before anything is measured.
	time.Sleep(time.Second)

	offsets := make(map[int32]kgo.Offset, parts)
	for p := range parts {
		offsets[p] = kgo.NewOffset().At(0)
	}
	var h fetchHook
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(spec.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: offsets}),
		kgo.FetchMaxBytes(spec.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(spec.FetchMaxBytes),
		kgo.WithHooks(&h),
	)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)

	want := int64(spec.Rounds) * int64(parts)
	next := make([]int64, parts) // the offset each partition must deliver next
	res := Result{PreloadSeconds: preload.Seconds()}
	// The first records, as many as there are partitions, are a warm-up
	// outside the window: the consumer's first fetches (and the broker's
	// first reads of every log) are not what a fetch costs.
	var start time.Time
	var records, bytes int64
	for records < want {
		if start.IsZero() && records >= int64(parts) {
			h.on.Store(true)
			start = time.Now()
			mark(MarkStart)
			res.Records, res.Bytes = -records, -bytes
		}
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("fetched %d of %d records: %w", records, want, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return Result{}, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] && bad == nil {
				bad = fmt.Errorf("partition %d: offset %d, want %d (a record lost or repeated)", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			records++
			bytes += int64(len(r.Value))
		})
		if bad != nil {
			return Result{}, bad
		}
	}
	if start.IsZero() {
		return Result{}, fmt.Errorf("%d records: fewer than the %d of the warm-up", want, parts)
	}
	res.Records += records
	res.Bytes += bytes
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	h.on.Store(false)
	res.Fetches, res.FetchRequestBytes, res.FetchResponseBytes = h.fetches.Load(), h.written.Load(), h.read.Load()
	return res, nil
}

// preloadRounds writes spec.Rounds records to every partition, one
// ProduceSync per round, so that each record is a batch of its own.
func preloadRounds(ctx context.Context, spec Spec, parts int32) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(spec.Addr), kgo.DefaultProduceTopic(spec.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return 0, err
	}
	defer closeBounded(cl)
	value := payload(spec.RecordBytes)
	start := time.Now()
	recs := make([]*kgo.Record, parts)
	for range spec.Rounds {
		for p := range parts {
			recs[p] = &kgo.Record{Partition: p, Value: value}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// fetchHook counts the consumer's Fetch requests and their bytes while on.
type fetchHook struct {
	on                     atomic.Bool
	fetches, written, read atomic.Int64
}

func (h *fetchHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && err == nil && h.on.Load() {
		h.fetches.Add(1)
		h.written.Add(int64(n))
	}
}

func (h *fetchHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && err == nil && h.on.Load() {
		h.read.Add(int64(n))
	}
}
