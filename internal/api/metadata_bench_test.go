package api_test

import (
	"context"
	"testing"
	"time"

	"kbroker/bench/admin"
	"kbroker/broker/brokertest"
)

// BenchmarkMetadataAllTopics100k: Metadata v12 of every topic of 10,000
// topics × 10 partitions (issue 18's 100,000 partitions in the image),
// until the answer's last byte:
//
//	go test ./internal/api/ -run '^$' -bench MetadataAllTopics -benchtime 20x -cpuprofile cpu.out
func BenchmarkMetadataAllTopics100k(b *testing.B) {
	br := brokertest.Start(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	if _, err := admin.CreatePartitionedTopics(ctx, br.Addr(), "md", 10000, 10, 1000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	t, err := admin.MetadataAll(ctx, br.Addr(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if t.Items != 100000 {
		b.Fatalf("%d partitions answered, want 100000", t.Items)
	}
	reportLatencies(b, t)
}
