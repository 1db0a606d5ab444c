package replica_test

// The replication throttles on two brokers sharing a real etcd: a replica
// a reassignment adds catches up at about the throttled rate, an
// unthrottled partition alongside is not slowed, and raising the rate
// live takes effect, on the leader's side and on the follower's.

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

const (
	throttledRecords    = 96
	throttledRecordSize = 16 << 10 // 1.5 MiB a partition
	throttledRate       = 128 << 10
)

func TestReplicationThrottleSlowsOnlyThrottledReplicasAndFollowsItsRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster test of several seconds")
	}
	etcd := etcdtest.Start(t)
	var brokers []*broker.Broker
	for id := 1; id <= 2; id++ {
		brokers = append(brokers, brokertest.StartWith(t, config.Properties{
			"listeners":                        "PLAINTEXT://127.0.0.1:0",
			"metrics.listener":                 "127.0.0.1:0",
			"log.dirs":                         t.TempDir(),
			"node.id":                          strconv.Itoa(id),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"auto.leader.rebalance.enable":     "false",
			// Small fetches, so a throttle shows as a rate rather than
			// one 1 MiB read let through before it is exceeded.
			"replica.fetch.max.bytes": "65536",
		}))
	}
	ctx := testkit.Context(t, 90*time.Second)
	adm, err := admin.New(kgo.SeedBrokers(brokers[0].Addr()), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for _, side := range []string{"leader", "follower"} {
		t.Run(side, func(t *testing.T) {
			slow, fast := "slow-"+side, "fast-"+side
			// Each partition on broker 1 alone, then reassigned to
			// brokers 1 and 2: broker 2 copies it from broker 1.
			for _, topic := range []string{slow, fast} {
				res, err := adm.CreateTopics(ctx, []admin.NewTopic{{Name: topic, Partitions: 1, ReplicationFactor: 1}}, false)
				if err != nil || res.All() != nil {
					t.Fatalf("creating %s: %v %v", topic, err, res.All())
				}
				res2, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: topic, Partition: 0, Replicas: []int32{1}}})
				if err != nil || res2[0].Err != nil {
					t.Fatalf("placing %s on broker 1: %v %+v", topic, err, res2)
				}
				if !testkit.WaitFor(20*time.Second, func() bool { return onlyOn(t, adm, topic, 1) }) {
					t.Fatalf("%s not moved to broker 1 alone", topic)
				}
				produceThrottled(t, brokers, topic)
			}
			// The reassignment tool throttles the leader's side on the
			// existing replicas and the follower's on the added ones.
			throttledReplica := map[string]string{"leader": "0:1", "follower": "0:2"}[side]
			rate := side + ".replication.throttled.rate"
			alter(t, adm, map[admin.ConfigResource][]admin.ConfigChange{
				admin.BrokerDefaultResource(): {admin.Set(rate, strconv.Itoa(throttledRate))},
				admin.TopicResource(slow):     {admin.Set(side+".replication.throttled.replicas", throttledReplica)},
			})
			res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{
				{Topic: slow, Partition: 0, Replicas: []int32{1, 2}},
				{Topic: fast, Partition: 0, Replicas: []int32{1, 2}},
			})
			if err != nil || slices.ContainsFunc(res, func(r admin.ReplicaResult) bool { return r.Err != nil }) {
				t.Fatalf("reassigning: %v %+v", err, res)
			}
			start := time.Now()
			total := logBytes(t, brokers[0], slow)
			if !testkit.WaitFor(20*time.Second, func() bool { return inSync(t, adm, fast, 2) }) {
				t.Fatalf("the unthrottled partition did not catch up in 20 s")
			}
			fastTook := time.Since(start)
			if copied := logBytes(t, brokers[1], slow); copied > total/2 {
				t.Errorf("the throttled partition copied %d of %d bytes by the time the unthrottled one caught up (%v): not throttled", copied, total, fastTook)
			}
			// At 128 KiB/s, 1.5 MiB takes some 11 s; after 3 s at most
			// about half is there (one sample's burst, three of rate and
			// a fetch's worth of overshoot), however loaded the machine.
			time.Sleep(time.Until(start.Add(3 * time.Second)))
			copied := logBytes(t, brokers[1], slow)
			if copied > total/2 || inSync(t, adm, slow, 2) {
				t.Fatalf("throttled at %d B/s, %d of %d bytes copied after 3 s", throttledRate, copied, total)
			}
			if copied == 0 {
				t.Errorf("nothing of the throttled partition copied in 3 s: throttled to a halt")
			}
			if withheld := scrape(t, brokers, `kbroker_replication_throttle_withheld_total{type="`+strings.ToUpper(side[:1])+side[1:]+`Replication"}`); withheld == 0 {
				t.Errorf("the %s throttle withheld nothing, by its metric", side)
			}
			// The rest (at least 768 KiB, 6 s at the old rate) comes at
			// once when the rate is raised.
			alter(t, adm, map[admin.ConfigResource][]admin.ConfigChange{
				admin.BrokerDefaultResource(): {admin.Set(rate, strconv.Itoa(1<<30))},
			})
			raised := time.Now()
			if !testkit.WaitFor(20*time.Second, func() bool { return inSync(t, adm, slow, 2) }) {
				t.Fatalf("the throttled partition did not catch up in 20 s after the rate was raised")
			}
			if took := time.Since(raised); took > 4*time.Second {
				t.Errorf("the throttled partition took %v to catch up after its rate was raised; the remaining %d bytes take 6 s at the old rate", took, total-copied)
			}
			// Caught up, the replica is in sync: the throttle, back at
			// its rate and exceeded by the catch-up just made, no longer
			// holds it back, and acks=all produces answer at once.
			alter(t, adm, map[admin.ConfigResource][]admin.ConfigChange{
				admin.BrokerDefaultResource(): {admin.Set(rate, strconv.Itoa(throttledRate))},
			})
			produced := time.Now()
			produceThrottled(t, brokers, slow, kgo.RequiredAcks(kgo.AllISRAcks()))
			if took := time.Since(produced); took > 5*time.Second || !inSync(t, adm, slow, 2) {
				t.Errorf("acks=all produce of %d bytes to the in-sync throttled replica took %v (in sync: %v); the throttle would need %v", total, took, inSync(t, adm, slow, 2),
					time.Duration(total/throttledRate)*time.Second)
			}
			alter(t, adm, map[admin.ConfigResource][]admin.ConfigChange{
				admin.BrokerDefaultResource(): {admin.Delete(rate)},
			})
		})
	}
}

// produceThrottled produces throttledRecords records of about
// throttledRecordSize to topic, each a batch of its own.
func produceThrottled(t *testing.T, brokers []*broker.Broker, topic string, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers[0].Addr(), brokers[1].Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(throttledRecordSize + 1024)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testkit.Context(t, 30*time.Second)
	for range throttledRecords {
		v := make([]byte, throttledRecordSize-100) // a batch of about throttledRecordSize
		rand.Read(v)
		cl.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func alter(t *testing.T, adm *admin.Client, changes map[admin.ConfigResource][]admin.ConfigChange) {
	t.Helper()
	res, err := adm.AlterConfigs(testkit.Context(t, 10*time.Second), changes, admin.AlterOptions{Incremental: true})
	if err == nil {
		err = res.All()
	}
	if err != nil {
		t.Fatalf("altering configs: %v", err)
	}
}

// inSync reports whether broker id is in the ISR of topic's partition 0.
func inSync(t *testing.T, adm *admin.Client, topic string, id int32) bool {
	t.Helper()
	d, err := adm.DescribeTopics(testkit.Context(t, 10*time.Second), topic)
	if err != nil || len(d) != 1 || len(d[0].Partitions) != 1 {
		t.Fatalf("describing %s: %v %+v", topic, err, d)
	}
	return slices.Contains(d[0].Partitions[0].ISR, id)
}

// onlyOn reports whether topic's partition 0 has broker id alone as its
// replica and leader.
func onlyOn(t *testing.T, adm *admin.Client, topic string, id int32) bool {
	t.Helper()
	d, err := adm.DescribeTopics(testkit.Context(t, 10*time.Second), topic)
	if err != nil || len(d) != 1 || len(d[0].Partitions) != 1 {
		t.Fatalf("describing %s: %v %+v", topic, err, d)
	}
	p := d[0].Partitions[0]
	return slices.Equal(p.Replicas, []int32{id}) && p.Leader == id
}

// logBytes is the size of b's log of topic's partition 0: what it copied.
func logBytes(t *testing.T, b *broker.Broker, topic string) int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(b.Config().LogDirs[0], topic+"-0", "*.log"))
	var n int64
	for _, s := range segs {
		if fi, err := os.Stat(s); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// scrape sums one series over the brokers' metrics.
func scrape(t *testing.T, brokers []*broker.Broker, series string) float64 {
	t.Helper()
	var sum float64
	for _, b := range brokers {
		for _, line := range strings.Split(testkit.ScrapeMetrics(t, b.MetricsAddr()), "\n") {
			if name, v, ok := strings.Cut(line, " "); ok && name == series {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(fmt.Errorf("%s: %w", line, err))
				}
				sum += f
			}
		}
	}
	return sum
}
