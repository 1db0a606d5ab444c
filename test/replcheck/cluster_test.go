package replcheck

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// threeBrokers runs an etcd and three in-process brokers on it, each with
// a metrics listener.
func threeBrokers(t *testing.T) []*broker.Broker {
	t.Helper()
	etcd := etcdtest.Start(t)
	var out []*broker.Broker
	for id := 1; id <= 3; id++ {
		out = append(out, brokertest.Start(t, config.Properties{
			"node.id":                          strconv.Itoa(id),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"metadata.etcd.request.timeout.ms": "1000",
			"quota.window.size.seconds":        "1",
			"metrics.listener":                 "127.0.0.1:0",
			"log.retention.check.interval.ms":  "600000",
		}))
	}
	return out
}

// metric is the value of the series name (with its labels, exactly as
// exposed) on b's /metrics; ok is false when it is absent.
func metric(t *testing.T, b *broker.Broker, series string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(testkit.ScrapeMetrics(t, b.MetricsAddr())))
	for sc.Scan() {
		name, v, found := strings.Cut(sc.Text(), " ")
		if found && name == series {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f, true
		}
	}
	return 0, false
}

func sum(t *testing.T, brokers []*broker.Broker, series string) float64 {
	var s float64
	for _, b := range brokers {
		v, _ := metric(t, b, series)
		s += v
	}
	return s
}

// With a fetch quota of 1 KiB/s for every client id, followers still copy
// 256 KiB of acks=all records at once: a follower's fetch is replication,
// which client quotas do not throttle (without the exemption every
// produce timed out). Large follower reads are sent from the segment
// files. Its bytes count as replication bytes out on the
// leader and in on the followers, and not as client bytes out. The
// replication gauges follow a follower's loss: the leader reports the
// partition under-replicated and at its min ISR, then under it.
func TestFollowerFetchesSkipClientQuotasAndReplicationMetricsFollowTheISR(t *testing.T) {
	brokers := threeBrokers(t)
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.Addr())
	}
	ctx := testkit.Context(t, 90*time.Second)
	adm := kadm.NewClient(testkit.Client(t, "", kgo.SeedBrokers(seeds...)))
	rate := 1024.0
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id"}}, // the default client id
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: rate}},
	}}); err != nil {
		t.Fatal(err)
	}
	minISR := "2"
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "quota"); err != nil || res.Err != nil {
		t.Fatalf("creating: %v %v", err, res.Err)
	}
	time.Sleep(500 * time.Millisecond) // the quota reaches every broker through etcd
	cl := testkit.Client(t, "", kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("quota"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.ProduceRequestTimeout(5*time.Second), kgo.ProducerBatchMaxBytes(16<<10))
	start := time.Now()
	payload := make([]byte, 4<<10) // random: compression leaves it its size
	for i := range 64 {
		rand.Read(payload)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: slices.Clone(payload)}).FirstErr(); err != nil {
			t.Fatalf("acks=all record %d after %v: %v", i, time.Since(start).Round(time.Millisecond), err)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("256 KiB of acks=all took %v: the followers were throttled", d)
	}

	// 2 MiB produced at once (acks=1) reach the followers in reads large
	// enough to be sent from the segment files, as consumers' are: no
	// consumer runs in this process, so what sendfile sent went to them.
	fromFiles := wire.SentFromFiles()
	fast := testkit.Client(t, "", kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("quota"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for range 512 {
		rand.Read(payload)
		fast.Produce(ctx, &kgo.Record{Value: slices.Clone(payload)}, nil)
	}
	if err := fast.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 20*time.Second, func() bool { return wire.SentFromFiles()-fromFiles >= 2<<20 }) {
		t.Errorf("followers were sent %d bytes from files while copying 2 MiB twice, want at least 2 MiB", wire.SentFromFiles()-fromFiles)
	}

	md, err := adm.Metadata(ctx, "quota")
	if err != nil {
		t.Fatal(err)
	}
	leaderID := md.Topics["quota"].Partitions[0].Leader
	leader := brokers[leaderID-1]
	var followers []*broker.Broker
	for _, b := range brokers {
		if b != leader {
			followers = append(followers, b)
		}
	}
	var out float64
	if !waitFor(ctx, 20*time.Second, func() bool {
		out, _ = metric(t, leader, "kbroker_replication_bytes_out_total")
		return out >= 2*576*4<<10
	}) {
		t.Errorf("leader's replication bytes out = %v, want at least both followers' 2.25 MiB", out)
	}
	if out, ok := metric(t, leader, `kbroker_topic_bytes_out_total{topic="quota"}`); ok && out > 0 {
		t.Errorf("client bytes out of the topic = %v with no consumer: follower fetches were counted", out)
	}
	for _, f := range followers {
		if in, _ := metric(t, f, "kbroker_replication_bytes_in_total"); in < 576*4<<10 {
			t.Errorf("broker %d's replication bytes in = %v, want at least 2.25 MiB", f.NodeID(), in)
		}
		if lag, ok := metric(t, f, "kbroker_replica_fetcher_max_lag"); !ok || lag != 0 {
			t.Errorf("broker %d's max lag = %v (reported %v), want 0 once caught up", f.NodeID(), lag, ok)
		}
	}
	if n := sum(t, brokers, "kbroker_replica_leader_partitions"); n != 1 {
		t.Errorf("leader partitions over the cluster = %v, want 1", n)
	}
	gauges := func() string {
		var s []string
		for _, name := range []string{"kbroker_replica_under_replicated_partitions", "kbroker_replica_at_min_isr_partitions", "kbroker_replica_under_min_isr_partitions"} {
			v, _ := metric(t, leader, name)
			s = append(s, fmt.Sprint(v))
		}
		return strings.Join(s, " ")
	}
	if g := gauges(); g != "0 0 0" {
		t.Errorf("under-replicated, at-min-ISR, under-min-ISR with the full ISR = %s, want 0 0 0", g)
	}

	// One follower gone: under-replicated, at the min ISR.
	if err := followers[0].Close(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 20*time.Second, func() bool { return gauges() == "1 1 0" }) {
		t.Errorf("with one follower gone the leader reports %s, want 1 1 0", gauges())
	}
	// Both gone: under the min ISR (acks=all now fails).
	if err := followers[1].Close(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, 20*time.Second, func() bool { return gauges() == "1 0 1" }) {
		t.Errorf("with both followers gone the leader reports %s, want 1 0 1", gauges())
	}
	if v, ok := metric(t, leader, "kbroker_controller_offline_partitions"); !ok || v != 0 {
		t.Errorf("the last broker, the controller, reports %v offline partitions (reported %v), want 0", v, ok)
	}
}
