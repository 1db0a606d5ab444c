package api_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
)

// longPoll is a Fetch of every partition of topic from offset 0 that waits
// up to maxWait for one byte (named by id: kgo sends the newest version).
func longPoll(topic kadm.CreateTopicResponse, partitions int32, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = int32(maxWait.Milliseconds()), 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Topic, topic.ID
	for p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// sendFetch sends req from its own goroutine; the answer and how long it
// took arrive on the channel.
func sendFetch(t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest) <-chan fetchAnswer {
	done := make(chan fetchAnswer, 1)
	start := time.Now()
	go func() {
		resp, err := req.RequestWith(ctx(t), cl.Broker(1))
		done <- fetchAnswer{resp, err, time.Since(start)}
	}()
	return done
}

type fetchAnswer struct {
	resp *kmsg.FetchResponse
	err  error
	took time.Duration
}

func receive(t *testing.T, done <-chan fetchAnswer) fetchAnswer {
	t.Helper()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a
	case <-time.After(15 * time.Second):
		t.Fatal("no answer to the fetch")
	}
	return fetchAnswer{}
}

// A consumer's long poll is answered as soon as any of its partitions gets
// a record, not at max_wait_ms.
func TestLongPollingFetchAnswersOnAnAppendToAnyOfItsPartitions(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 3, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	done := sendFetch(t, cl, longPoll(topic, 3, time.Minute))
	time.Sleep(300 * time.Millisecond) // the fetch is waiting
	select {
	case a := <-done:
		t.Fatalf("answered before anything was written: %+v", a)
	default:
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Partition: 2, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a := receive(t, done) // well before max_wait_ms
	for _, p := range a.resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.HighWatermark != map[int32]int64{2: 1}[p.Partition] || (p.Partition == 2) != (len(p.RecordBatches) > 0) {
			t.Fatalf("partition %d: error %d, high watermark %d, %d record bytes", p.Partition, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
}

// With nothing to return, the fetch is answered, empty, at max_wait_ms.
func TestLongPollingFetchAnswersEmptyAtMaxWait(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 2, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	const maxWait = 400 * time.Millisecond
	a := receive(t, sendFetch(t, cl, longPoll(topic, 2, maxWait)))
	if a.took < maxWait {
		t.Fatalf("answered after %v, before max_wait_ms %v", a.took, maxWait)
	}
	for _, p := range a.resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
			t.Fatalf("partition %d: error %d, %d record bytes, high watermark %d", p.Partition, p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	}
}

// A fetch waiting on a topic that is deleted answers at once, with the
// error a consumer of a deleted topic id gets.
func TestWaitingFetchAnswersWhenItsTopicIsDeleted(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	done := sendFetch(t, cl, longPoll(topic, 1, time.Minute))
	time.Sleep(300 * time.Millisecond) // the fetch is waiting
	if _, err := adm.DeleteTopic(ctx(t), "t"); err != nil {
		t.Fatal(err)
	}
	a := receive(t, done)
	if code := a.resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("error %d, want UNKNOWN_TOPIC_ID", code)
	}
}
