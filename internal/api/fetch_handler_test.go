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
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/quota"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
	"kbroker/internal/wire"
)

// benchServer is a Server over a real bbolt store and real logs, holding
// topic "t" with the given number of partitions.
func benchServer(b testing.TB, partitionCount int32) *Server {
	b.Helper()
	dir := b.TempDir()
	cfg, err := config.NewBroker(config.Properties{"log.dirs": dir, "node.id": "1"})
	if err != nil {
		b.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	bolt, err := meta.OpenBolt(filepath.Join(dir, "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	store, err := meta.Open(bolt, discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	logs, err := storage.OpenManager([]string{dir}, discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logs.Close() })
	if _, _, err := store.CreateTopics(context.Background(), []meta.NewTopic{{Topic: meta.Topic{Name: "t", Partitions: partitionCount, ReplicationFactor: 1}}}); err != nil {
		b.Fatal(err)
	}
	return New(Deps{Broker: cfg, Store: store, Logs: replica.New(cfg, store, dynconfig.New(dynconfig.Options{Broker: cfg, Store: store, Logger: discard, Audit: discard}), logs, discard), Metrics: metrics.New(), Quotas: quota.New(quota.Options{})})
}

// oneRecordBatch is a v2 record batch of one record with a value of size bytes.
func oneRecordBatch(size int) []byte {
	r := kmsg.Record{Value: make([]byte, size)}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1) // body was encoded with a 1-byte length varint of 0
	batch := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(), NumRecords: 1, Records: r.AppendTo(nil)}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
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
	produce(t, s, c, 1, oneRecordBatch(10))
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
				produce(b, s, c, p, oneRecordBatch(100))
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
					produce(b, s, c, n-1, oneRecordBatch(100)) // Append stamps the batch it is given
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
