package workload

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Fetch is B2: produce PreloadBytes of records (not measured), then consume
// the partition from offset 0 with a fresh client and large fetch limits,
// measuring payload bytes returned per second until every preloaded record
// has arrived.
func Fetch(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	n, preload, err := preloadTopic(ctx, spec)
	if err != nil {
		return Result{}, fmt.Errorf("preload: %w", err)
	}
	// Drop the producer's garbage so the consumer does not pay for it.
	runtime.GC()

	maxBytes := spec.FetchMaxBytes
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(spec.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			spec.Topic: {0: kgo.NewOffset().At(0)},
		}),
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxBytes),
		// A response may exceed FetchMaxBytes by one batch plus framing.
		kgo.BrokerMaxReadBytes(2*maxBytes),
	)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)

	var res Result
	res.PreloadSeconds = preload.Seconds()
	start := time.Now()
	mark(MarkStart)
	for res.Records < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("fetched %d of %d records: %w", res.Records, n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return Result{}, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += int64(len(r.Value))
		})
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	return res, nil
}

// Preload writes spec.PreloadBytes of spec.RecordBytes records to
// spec.Topic with the B1 producer settings, as B2's preload does, and
// returns the record count and how long it took (R3 preloads a leader in
// kbench's own process).
func Preload(ctx context.Context, spec Spec) (int64, time.Duration, error) {
	return preloadTopic(ctx, spec)
}

// preloadTopic produces PreloadBytes worth of records with the B1 producer
// settings and waits until every one is acknowledged.
func preloadTopic(ctx context.Context, spec Spec) (int64, time.Duration, error) {
	n := spec.PreloadBytes / int64(spec.RecordBytes)
	cl, err := kgo.NewClient(producerOpts(spec.Addr, spec.Topic, spec.RecordBytes, false)...)
	if err != nil {
		return 0, 0, err
	}
	defer closeBounded(cl)
	var c counter
	c.inWindow.Store(true) // every preload record must succeed
	value := payload(spec.RecordBytes)
	start := time.Now()
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, c.promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, err
	}
	if c.errors.Load() > 0 {
		return 0, 0, fmt.Errorf("%d records failed, first: %s", c.errors.Load(), c.err)
	}
	if got := c.records.Load(); got != n {
		return 0, 0, fmt.Errorf("%d of %d records acknowledged", got, n)
	}
	return n, time.Since(start), nil
}
