package api

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/quota"
	"kbroker/internal/record"
	"kbroker/internal/replica"
	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// BenchmarkProduceRoundRobin is the broker's side of the scale test's
// round-robin produce (test/scale), in-process: one acks=all Produce of
// 3 MB, as 3,000 partitions (300 topics × 10) of one 1 KB record each, or
// as 10 partitions (one topic) of 300 records each. The difference per
// partition is what the broker pays for each batch it appends.
//
//	go test ./internal/api/ -run '^$' -bench ProduceRoundRobin -benchmem
func BenchmarkProduceRoundRobin(b *testing.B) {
	const recordBytes, totalRecords = 1000, 3000
	for _, shape := range []struct{ topics, perTopic int }{{300, 10}, {1, 10}} {
		partitions := shape.topics * shape.perTopic
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			k := testkit.NewBrokerBase(b)
			var topics []meta.NewTopic
			for i := range shape.topics {
				topics = append(topics, meta.NewTopic{Topic: meta.Topic{Name: fmt.Sprintf("t%04d", i), Partitions: int32(shape.perTopic), ReplicationFactor: 1}})
			}
			if _, _, err := k.Store.CreateTopics(context.Background(), topics); err != nil {
				b.Fatal(err)
			}
			s := New(Deps{Broker: k.Config, Store: k.Store, Logs: replica.New(k.Config, k.Store, k.Configs, k.Logs, k.Logger), Metrics: metrics.New(), Quotas: quota.New(quota.Options{})})
			c := &wire.Conn{Principal: "User:ANONYMOUS"}
			bld := record.NewBuilder()
			value := make([]byte, recordBytes)
			for range totalRecords / partitions {
				bld.Add(time.Now().UnixMilli(), nil, value)
			}
			batch, err := bld.Build()
			if err != nil {
				b.Fatal(err)
			}
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 1000
			for _, t := range topics {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = t.Topic.Name
				for p := range int32(shape.perTopic) {
					rp := kmsg.NewProduceRequestTopicPartition()
					rp.Partition, rp.Records = p, make([]byte, 0, len(batch))
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			wireReq := &wire.Request{Key: req.Key(), Version: req.Version, Body: req}
			roundTrip := func() {
				// The append stamps each batch in place (offsets, epoch,
				// CRC), so every request gets fresh copies, as a decoded
				// request would.
				for _, rt := range req.Topics {
					for i := range rt.Partitions {
						rt.Partitions[i].Records = append(rt.Partitions[i].Records[:0], batch...)
					}
				}
				resp, err := handleProduce(context.Background(), s, c, wireReq)
				if err != nil {
					b.Fatal(err)
				}
				for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							b.Fatalf("%s[%d]: error %d", rt.Topic, rp.Partition, rp.ErrorCode)
						}
					}
				}
				_ = resp.AppendTo(nil)
			}
			roundTrip() // the logs' first records (files created and synced)
			b.ReportAllocs()
			b.SetBytes(totalRecords * recordBytes)
			var start syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &start)
			for b.Loop() {
				roundTrip()
			}
			var end syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &end)
			used := float64(end.Utime.Nano() + end.Stime.Nano() - start.Utime.Nano() - start.Stime.Nano())
			b.ReportMetric(used/float64(b.N)/1e3, "cpu-µs/request")
			b.ReportMetric(used/float64(b.N)/float64(partitions), "cpu-ns/partition")
		})
	}
}
