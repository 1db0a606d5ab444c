package interop

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// franzRecord is record i of the franz-go test: partition i%4 gets every
// fourth record, so record i must land at offset i/4 of its partition.
func franzRecord(i int) *kgo.Record {
	return &kgo.Record{
		Partition: int32(i % 4),
		Key:       fmt.Appendf(nil, "key-%06d", i),
		Value:     fmt.Appendf(nil, "value-%06d-%x", i, i*7919),
	}
}

// produceAsync produces records [from, to) with a bounded number buffered
// (kgo.MaxBufferedRecords on the client) and returns their acknowledged
// offsets, failing the test on any error.
func produceAsync(t *testing.T, cl *kgo.Client, topic string, from, to int, rec func(int) *kgo.Record) []int64 {
	t.Helper()
	ctx := testkit.Context(t, 60*time.Second)
	offsets := make([]int64, to-from)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for i := from; i < to; i++ {
		r := rec(i)
		r.Topic = topic
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("record %d: %w", i, err)
			}
			offsets[i-from] = r.Offset
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return offsets
}

// checkFranzRecords checks that partition p holds exactly records
// p, p+4, p+8, … of the first n, each once, at offsets 0, 1, 2, …
func checkFranzRecords(t *testing.T, got map[int32][]*kgo.Record, n int) {
	t.Helper()
	for p := int32(0); p < 4; p++ {
		want := (n - int(p) + 3) / 4
		if len(got[p]) != want {
			t.Fatalf("partition %d: consumed %d records, want %d", p, len(got[p]), want)
		}
		for j, r := range got[p] {
			w := franzRecord(j*4 + int(p))
			if r.Offset != int64(j) || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) {
				t.Fatalf("partition %d record %d: offset %d key %q value %q; want offset %d key %q value %q",
					p, j, r.Offset, r.Key, r.Value, j, w.Key, w.Value)
			}
		}
	}
}

// A user produces 100,000 records with franz-go (idempotent, snappy by
// default), reads every one back in order, restarts the broker over the same
// data and reads the same records at the same offsets, then keeps producing
// from where the log ended.
func TestFranzGoProduceConsumeSurvivesRestart(t *testing.T) {
	const (
		topic = "franz-100k"
		n     = 100_000
		more  = 2_000
	)
	props := testProps(t.TempDir(), nil)
	b := brokertest.StartWith(t, props)
	testkit.CreateTopic(t, newAdmin(t, b.Addr()), topic, 4, nil)

	start := time.Now()
	cl := testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(10_000))
	offsets := produceAsync(t, cl, topic, 0, n, franzRecord)
	for i, off := range offsets {
		if off != int64(i/4) {
			t.Fatalf("record %d acknowledged at offset %d of partition %d, want %d", i, off, i%4, i/4)
		}
	}
	cl.Close()
	t.Logf("produced %d records in %v", n, time.Since(start))

	start = time.Now()
	checkFranzRecords(t, consumeAll(t, b.Addr(), topic, 30*time.Second), n)
	t.Logf("consumed %d records in %v", n, time.Since(start))

	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b = brokertest.StartWith(t, props)
	adm := newAdmin(t, b.Addr())
	for p, end := range endOffsets(t, adm, topic) {
		if want := int64(n / 4); end != want {
			t.Errorf("after restart partition %d ends at %d, want %d", p, end, want)
		}
	}
	checkFranzRecords(t, consumeAll(t, b.Addr(), topic, 30*time.Second), n)

	cl = testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(10_000))
	offsets = produceAsync(t, cl, topic, n, n+more, franzRecord)
	for j, off := range offsets {
		if i := n + j; off != int64(i/4) {
			t.Fatalf("after restart record %d acknowledged at offset %d of partition %d, want %d", i, off, i%4, i/4)
		}
	}
	checkFranzRecords(t, consumeAll(t, b.Addr(), topic, 30*time.Second), n+more)
}
