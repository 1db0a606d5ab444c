package api_test

// In-process versions of kbench's B9 admin-scale timings (issues 3 and 4),
// for profiling a handler without the whole suite:
//
//	go test ./internal/api/ -run '^$' -bench AdminScale -benchtime 20x -cpuprofile cpu.out
//
// Each reports the p50 and p99 of one request's latency (until the last
// response byte, as kbench measures it).

import (
	"context"
	"testing"
	"time"

	"kbroker/bench/admin"
	"kbroker/bench/stats"
	"kbroker/broker"
	"kbroker/broker/brokertest"
)

// brokerWithTopicConfigs starts a broker holding topics cfg-0000000… with
// config overrides, and a context bounding the benchmark.
func brokerWithTopicConfigs(b *testing.B, topics int) (*broker.Broker, context.Context) {
	b.Helper()
	br := brokertest.Start(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	if err := admin.CreateTopicsWithConfigs(ctx, br.Addr(), "cfg", topics, 250); err != nil {
		b.Fatal(err)
	}
	return br, ctx
}

func reportLatencies(b *testing.B, t admin.Timings) {
	b.Helper()
	p := stats.Percentiles(t.Ms, 0.5, 0.99)
	b.ReportMetric(p[0], "p50-ms")
	b.ReportMetric(p[1], "p99-ms")
	b.ReportMetric(float64(t.ResponseBytes), "resp-bytes")
	b.ReportMetric(0, "ns/op") // the loop times setup too; the percentiles are the measure
}

// BenchmarkAdminScaleDescribeConfigs: every config of 10,000 topics (three
// overrides each) in one DescribeConfigs v4 request.
func BenchmarkAdminScaleDescribeConfigs(b *testing.B) {
	const topics = 10000
	br, ctx := brokerWithTopicConfigs(b, topics)
	b.ResetTimer()
	t, err := admin.DescribeTopicConfigs(ctx, br.Addr(), "cfg", topics, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportLatencies(b, t)
}

// BenchmarkAdminScaleAlterConfigs: IncrementalAlterConfigs of one topic's
// retention.ms with 10,000 topics present (durable commit each).
func BenchmarkAdminScaleAlterConfigs(b *testing.B) {
	br, ctx := brokerWithTopicConfigs(b, 10000)
	b.ResetTimer()
	t, err := admin.AlterTopicConfig(ctx, br.Addr(), "cfg-0000000", b.N, false)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportLatencies(b, t)
}

// BenchmarkAdminScaleDescribeClientQuotas: DescribeClientQuotas matching
// all of 100,000 quota entities.
func BenchmarkAdminScaleDescribeClientQuotas(b *testing.B) {
	const entities = 100000
	br := brokertest.Start(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := admin.LoadQuotaEntities(ctx, br.Addr(), entities, 1000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	t, err := admin.DescribeQuotasAll(ctx, br.Addr(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportLatencies(b, t)
}
