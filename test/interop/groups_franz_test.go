package interop

import (
	"context"
	"errors"
	"fmt"
	"kbroker/internal/testkit"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// groupProps make the first rebalance of a test group immediate.
var groupProps = config.Properties{"group.initial.rebalance.delay.ms": "0"}

// produceN writes values "from".."to-1" round-robin over topic's
// partitions, uncompressed (kafkajs reads no snappy).
func produceN(t *testing.T, addr, topic string, from, to int) {
	t.Helper()
	cl := testkit.Client(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testkit.Context(t, 30*time.Second)
	for i := from; i < to; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// groupConsume runs members group consumers of topic, each committing what
// it has processed (kgo's autocommit, and a final commit on leave), until
// together they have seen want distinct values; it returns how often each
// value was seen.
func groupConsume(t *testing.T, addr, topic, group string, members int, want int, balancer kgo.GroupBalancer) map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan struct{})
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	var once sync.Once
	finish := func() { once.Do(func() { close(done); stopPolling() }) }
	for i := 0; i < members; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(balancer), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.AutoCommitInterval(200*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close() // leaves the group after committing
			for {
				fs := cl.PollFetches(pollCtx)
				select {
				case <-done:
					if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
						t.Errorf("final commit: %v", err)
					}
					return
				default:
				}
				fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s[%d]: %v", topic, p, err) })
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
				if len(seen) >= want {
					finish()
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		t.Errorf("group %s saw %d of %d values", group, len(seen), want)
		mu.Unlock()
		finish()
	}
	wg.Wait()
	return seen
}

// committedTotal sums the group's committed offsets over topic.
func committedTotal(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(testkit.Context(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At > 0 {
			sum += o.At
		}
	})
	return sum
}

func testFranzGroup(t *testing.T, balancer kgo.GroupBalancer) {
	dir := t.TempDir()
	b := brokertest.StartWith(t, testProps(dir, groupProps))
	addr := b.Addr()
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "orders", 6, nil)
	produceN(t, addr, "orders", 0, 300)

	seen := groupConsume(t, addr, "orders", "g1", 3, 300, balancer)
	if len(seen) != 300 {
		t.Fatalf("saw %d distinct values, want 300", len(seen))
	}
	if got := committedTotal(t, adm, "g1", "orders"); got != 300 {
		t.Fatalf("committed offsets sum to %d, want 300 (every record processed)", got)
	}

	// A restarted consumer resumes from the commits: it sees only the new
	// records, even across a broker restart.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartWith(t, testProps(dir, groupProps))
	addr = b.Addr()
	produceN(t, addr, "orders", 300, 360)
	seen = groupConsume(t, addr, "orders", "g1", 2, 60, balancer)
	for v := range seen {
		var n int
		fmt.Sscan(v, &n)
		if n < 300 {
			t.Errorf("value %s consumed again after its offset was committed", v)
		}
	}
	if got := committedTotal(t, newAdmin(t, addr), "g1", "orders"); got != 360 {
		t.Fatalf("committed offsets sum to %d after the restart, want 360", got)
	}
}

func TestFranzGoGroupEager(t *testing.T) { testFranzGroup(t, kgo.RangeBalancer()) }

func TestFranzGoGroupCooperative(t *testing.T) { testFranzGroup(t, kgo.CooperativeStickyBalancer()) }

// The first group lookup creates `__consumer_offsets`: compacted, with
// offsets.topic.num.partitions partitions, listed as internal, and closed
// to producers.
func TestOffsetsTopicIsInternal(t *testing.T) {
	addr := startBroker(t, config.Properties{"offsets.topic.num.partitions": "7"})
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "data", 1, nil)
	ctx := testkit.Context(t, 20*time.Second)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "data", Partition: 0, At: 3, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "simple", os); err != nil || resp.Error() != nil {
		t.Fatalf("simple commit: %v %v", err, resp.Error())
	}
	details, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	d := details["__consumer_offsets"]
	if d.Err != nil || !d.IsInternal || len(d.Partitions) != 7 {
		t.Fatalf("__consumer_offsets: err %v internal %v partitions %d; want internal with 7", d.Err, d.IsInternal, len(d.Partitions))
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cfgs.On("__consumer_offsets", nil); err != nil || configValue(v.Configs, "cleanup.policy") != "compact" {
		t.Fatalf("cleanup.policy of __consumer_offsets: %v %v, want compact", configValue(v.Configs, "cleanup.policy"), err)
	}
	cl := testkit.Client(t, addr)
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("junk")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	if got := committedTotal(t, adm, "simple", "data"); got != 3 {
		t.Fatalf("simple group's offset %d, want 3", got)
	}
}

func configValue(cs []kadm.Config, name string) string {
	for _, c := range cs {
		if c.Key == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}
