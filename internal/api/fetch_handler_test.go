package api

// The Fetch handler in-process, without the network, over a real store and
// real logs: what a long poll is charged, and benchmarks,
//
//	go test ./internal/api/ -run '^$' -bench Fetch -benchmem
//
// BenchmarkFetchReady is the fast path (every partition has data: no wait);
// BenchmarkFetchParkAndWake a long-polling fetch woken by a produce to its
// partition, reporting the time from the produce's start to the fetch's
// return (wake-ns).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/quota"
	"kbroker/internal/replica"
	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// benchServer is a Server over a real bbolt store and real logs, holding
// topic "t" with the given number of partitions.
func benchServer(b testing.TB, partitionCount int32) *Server {
	b.Helper()
	k := testkit.NewBrokerBase(b)
	if _, _, err := k.Store.CreateTopics(context.Background(), []meta.NewTopic{{Topic: meta.Topic{Name: "t", Partitions: partitionCount, ReplicationFactor: 1}}}); err != nil {
		b.Fatal(err)
	}
	return New(Deps{Broker: k.Config, Store: k.Store, Logs: replica.New(k.Config, k.Store, k.Configs, k.Logs, k.Logger), Metrics: metrics.New(), Quotas: quota.New(quota.Options{})})
}

// produce appends one batch to partition p of "t" through the Produce handler.
func produce(b testing.TB, s *Server, c *wire.Conn, p int32, batch []byte) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := handleProduce(context.Background(), s, c, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		b.Error(err)
		return
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		b.Errorf("produce: error %d", code)
	}
}

// fetchRequest asks for every partition of "t" from the given offset.
func fetchRequest(partitionCount int32, offset int64, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 12, maxWaitMs, 1, 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := range partitionCount {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetch runs the Fetch handler and gives the read buffers back, as the
// connection does once the response is written.
func fetch(b testing.TB, s *Server, c *wire.Conn, r *wire.Request) *kmsg.FetchResponse {
	kresp, err := handleFetch(context.Background(), s, c, r)
	if err != nil {
		b.Fatal(err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.ErrorCode != 0 {
				b.Fatalf("fetch: partition %d: error %d", p.Partition, p.ErrorCode)
			}
			bufpool.Put(p.RecordBatches)
		}
	}
	return resp
}

// The time a fetch waits for records is not charged to the client's
// request-time quota (request_percentage): only the time it works is.
func TestParkedFetchTimeIsNotCharged(t *testing.T) {
	s, c := benchServer(t, 2), &wire.Conn{Principal: "User:ANONYMOUS"}
	const maxWait = 200 * time.Millisecond
	req := fetchRequest(2, 0, int32(maxWait.Milliseconds()))
	r := &wire.Request{Key: req.Key(), Version: req.Version, Body: req}
	start := time.Now()
	fetch(t, s, c, r)
	if took := time.Since(start); r.Parked < maxWait/2 || r.Parked > took {
		t.Fatalf("parked %v of a fetch that waited %v for max_wait_ms %v", r.Parked, took, maxWait)
	}
	produce(t, s, c, 1, testkit.OneRecordBatch(t, make([]byte, 10)))
	r = &wire.Request{Key: req.Key(), Version: req.Version, Body: req}
	if fetch(t, s, c, r); r.Parked != 0 {
		t.Fatalf("a fetch answered at once parked %v", r.Parked)
	}
}

func BenchmarkFetchReady(b *testing.B) {
	for _, n := range []int32{1, 100} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			s, c := benchServer(b, n), &wire.Conn{Principal: "User:ANONYMOUS"}
			for p := range n {
				produce(b, s, c, p, testkit.OneRecordBatch(b, make([]byte, 100)))
			}
			req := fetchRequest(n, 0, 500)
			b.ReportAllocs()
			for b.Loop() {
				fetch(b, s, c, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
			}
		})
	}
}

func BenchmarkFetchParkAndWake(b *testing.B) {
	for _, n := range []int32{1, 100} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			s, c := benchServer(b, n), &wire.Conn{Principal: "User:ANONYMOUS"}
			produced := make(chan time.Time)
			start := make(chan struct{})
			go func() {
				for range start {
					time.Sleep(200 * time.Microsecond) // the fetch has read and is waiting
					at := time.Now()
					produce(b, s, c, n-1, testkit.OneRecordBatch(b, make([]byte, 100))) // Append stamps the batch it is given
					produced <- at
				}
			}()
			defer close(start)
			var woken, wake time.Duration
			var next int64
			b.ReportAllocs()
			for b.Loop() {
				req := fetchRequest(n, 0, 10_000)
				req.Topics[0].Partitions[n-1].FetchOffset = next
				r := &wire.Request{Key: req.Key(), Version: req.Version, Body: req}
				start <- struct{}{}
				fetch(b, s, c, r)
				returned := time.Now()
				at := <-produced
				next++
				if r.Parked > 0 {
					woken++
					wake += returned.Sub(at)
				}
			}
			if woken > 0 {
				b.ReportMetric(float64(wake.Nanoseconds())/float64(woken), "wake-ns")
			}
			b.ReportMetric(float64(woken)/float64(b.N), "parked/op")
		})
	}
}
