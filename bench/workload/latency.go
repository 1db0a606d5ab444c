package workload

import (
	"context"
	"fmt"
	"time"

	"kbroker/bench/stats"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Latency is B3: one record at a time with ProduceSync, so there is never a
// queue and each sample is one produce round trip through client, kernel and
// broker. Latency under saturation would only measure buffer depth.
func Latency(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	cl, err := kgo.NewClient(withAcks(producerOpts(spec.Addr, spec.Topic, spec.RecordBytes, false), spec)...)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)
	value := payload(spec.RecordBytes)

	// Warm-up opens the connection and loads metadata; it is not sampled.
	for warm := time.Now().Add(spec.Warmup); time.Now().Before(warm); {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			return Result{}, fmt.Errorf("warm-up produce: %w", err)
		}
	}

	var res Result
	// Sized for ~50k produces/s; append grows it if a broker is faster.
	samples := make([]float64, 0, int(spec.Duration.Seconds()*50000))
	start := time.Now()
	stop := start.Add(spec.Duration)
	mark(MarkStart)
	for {
		t := time.Now()
		if !t.Before(stop) {
			break
		}
		err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
		lat := time.Since(t)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("latency run: %w", err)
			}
			res.Errors++
			if res.FirstErr == "" {
				res.FirstErr = err.Error()
			}
			continue
		}
		samples = append(samples, float64(lat.Nanoseconds())/1e3)
		res.Records++
		res.Bytes += int64(len(value))
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	p := stats.Percentiles(samples, 0.5, 0.99, 0.999)
	res.P50us, res.P99us, res.P999us = p[0], p[1], p[2]
	return res, nil
}
