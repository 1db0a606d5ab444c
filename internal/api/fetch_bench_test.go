package api_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// BenchmarkFetchCPUPerGB fetches a preloaded 64 MiB partition over and
// over with a raw client that reads each response into one reused buffer
// and parses only its framing, and reports the process's CPU time (broker
// and that thin client together; the client's share is the same in every
// variant) per GB of record bytes fetched: cpu-ms/GB.
func BenchmarkFetchCPUPerGB(b *testing.B) {
	for _, partitionMax := range []int32{1 << 20, 8 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("partition_max_bytes=%dMiB", partitionMax>>20), func(b *testing.B) { benchmarkFetch(b, partitionMax) })
	}
}

func benchmarkFetch(b *testing.B, partitionMax int32) {
	br := brokertest.Start(b, nil)
	cl := testkit.Client(b, br.Addr(), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	testkit.CreateTopic(b, kadm.NewClient(cl), "b2", 1, nil)
	value := make([]byte, 10<<10)
	var recs []*kgo.Record
	for range 6400 {
		recs = append(recs, &kgo.Record{Topic: "b2", Value: value})
	}
	if err := cl.ProduceSync(testkit.Context(b, time.Minute), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	nc, err := net.Dial("tcp", br.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	buf := make([]byte, 65<<20)
	var fetched int64
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	sentBefore := wire.SentFromFiles()
	start := cpu()
	offset := int64(0)
	for i := range b.N {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, 64<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "b2"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = 0, offset, partitionMax, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if _, err := nc.Write(testkit.Frame(req, int32(i))); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, buf[:4]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(buf))
		if _, err := io.ReadFull(nc, buf[:n]); err != nil {
			b.Fatal(err)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := resp.ReadFrom(buf[5:n]); err != nil { // correlation id, header tags
			b.Fatal(err)
		}
		records := resp.Topics[0].Partitions[0].RecordBatches
		fetched += int64(len(records))
		offset = nextOffset(records)
		if offset >= resp.Topics[0].Partitions[0].HighWatermark {
			offset = 0
		}
	}
	used := cpu() - start
	b.ReportMetric(float64(used.Milliseconds())/(float64(fetched)/1e9), "cpu-ms/GB")
	b.SetBytes(fetched / int64(b.N))
	b.ReportMetric(float64(wire.SentFromFiles()-sentBefore)/float64(fetched), "sendfile-share")
}

// nextOffset is the offset after the last batch in records.
func nextOffset(records []byte) int64 {
	var next int64
	for len(records) >= 61 {
		size := int(binary.BigEndian.Uint32(records[8:])) + 12
		if size > len(records) {
			break
		}
		next = int64(binary.BigEndian.Uint64(records)) + int64(binary.BigEndian.Uint32(records[23:])) + 1
		records = records[size:]
	}
	return next
}
