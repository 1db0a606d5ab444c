package broker_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// groupMetricsProps start a broker whose groups rebalance at once, with few
// `__consumer_offsets` partitions to load, and its metrics endpoint on.
func groupMetricsProps(extra config.Properties) config.Properties {
	props := config.Properties{
		"metrics.listener":                 "127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "3",
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

// sumSeries adds up the values of the series of name whose labels include
// every one of labels (`group="g"` …), and says how many there were.
func sumSeries(text, name string, labels ...string) (sum float64, n int) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		match := true
		for _, l := range labels {
			match = match && strings.Contains(m[1], l)
		}
		if !match {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		sum += v
		n++
	}
	return sum, n
}

// waitForSeries scrapes until the sum of the matching series is want.
func waitForSeries(t *testing.T, addr string, want float64, name string, labels ...string) {
	t.Helper()
	var got float64
	var text string
	if !testkit.WaitFor(15*time.Second, func() bool {
		text = testkit.ScrapeMetrics(t, addr)
		got, _ = sumSeries(text, name, labels...)
		return got == want
	}) {
		t.Fatalf("%s%v = %v, want %v:\n%s", name, labels, got, want, grepLines(text, name))
	}
}

// consumeAndCommit runs a group consumer of topic until it has n records,
// commits them, and returns the client, still a member of the group.
func consumeAndCommit(t *testing.T, addr, group, topic string, n int) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 30*time.Second)
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			cl.Close()
			t.Fatalf("poll: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		cl.Close()
		t.Fatalf("commit: %v", err)
	}
	return cl
}

func produceValues(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx := testkit.Context(t, 20*time.Second)
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// A group consumer's lag is on /metrics while it is behind, 0 once it has
// committed everything, and gone with the group; the groups-by-state gauge
// follows its join and leave.
func TestGroupMetricsLagAndStates(t *testing.T) {
	b := brokertest.Start(t, groupMetricsProps(nil))
	addr, maddr := b.Addr(), b.MetricsAddr()
	prod := testkit.Client(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(prod)
	testkit.CreateTopic(t, adm, "lagged", 2, nil)
	produceValues(t, prod, "lagged", 10)

	if _, n := sumSeries(testkit.ScrapeMetrics(t, maddr), "kbroker_group_lag", `group="g1"`); n != 0 {
		t.Fatalf("lag series for a group that has committed nothing: %d", n)
	}
	cons := consumeAndCommit(t, addr, "g1", "lagged", 10)
	text := testkit.ScrapeMetrics(t, maddr)
	if lag, n := sumSeries(text, "kbroker_group_lag", `group="g1"`, `topic="lagged"`); n != 2 || lag != 0 {
		t.Fatalf("caught-up consumer: %d lag series summing to %v, want 2 at 0:\n%s", n, lag, grepLines(text, "kbroker_group_lag"))
	}
	waitForSeries(t, maddr, 1, "kbroker_groups", `state="Stable"`, `type="classic"`)
	if v, _ := sumSeries(text, "kbroker_group_rebalances_total"); v < 1 {
		t.Errorf("kbroker_group_rebalances_total = %v after a consumer joined", v)
	}
	if v, _ := sumSeries(text, "kbroker_offset_commits_total", `result="ok"`); v < 2 {
		t.Errorf(`kbroker_offset_commits_total{result="ok"} = %v after committing two partitions`, v)
	}

	cons.Close() // leaves the group
	waitForSeries(t, maddr, 0, "kbroker_groups", `state="Stable"`)
	waitForSeries(t, maddr, 1, "kbroker_groups", `state="Empty"`, `type="classic"`)

	produceValues(t, prod, "lagged", 6)
	waitForSeries(t, maddr, 6, "kbroker_group_lag", `group="g1"`, `topic="lagged"`)

	cons = consumeAndCommit(t, addr, "g1", "lagged", 6)
	waitForSeries(t, maddr, 0, "kbroker_group_lag", `group="g1"`, `topic="lagged"`)
	cons.Close()
	waitForSeries(t, maddr, 1, "kbroker_groups", `state="Empty"`)

	if _, err := adm.DeleteGroup(testkit.Context(t, 10*time.Second), "g1"); err != nil {
		t.Fatal(err)
	}
	text = testkit.ScrapeMetrics(t, maddr)
	if strings.Contains(text, `group="g1"`) {
		t.Errorf("/metrics still has series of the deleted group g1:\n%s", grepLines(text, `group="g1"`))
	}
	if v, _ := sumSeries(text, "kbroker_groups"); v != 0 {
		t.Errorf("kbroker_groups sums to %v with no group left", v)
	}
}

// kbroker.metrics.group.lag.max.series bounds the lag series; those left
// out are counted. A commit the coordinator refuses counts as an error.
func TestGroupMetricsLagCap(t *testing.T) {
	b := brokertest.Start(t, groupMetricsProps(config.Properties{"kbroker.metrics.group.lag.max.series": "1"}))
	addr, maddr := b.Addr(), b.MetricsAddr()
	prod := testkit.Client(t, addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(prod)
	testkit.CreateTopic(t, adm, "capped", 1, nil)
	produceValues(t, prod, "capped", 3)
	for _, g := range []string{"first", "second"} {
		consumeAndCommit(t, addr, g, "capped", 3).Close()
	}

	text := testkit.ScrapeMetrics(t, maddr)
	if _, n := sumSeries(text, "kbroker_group_lag"); n != 1 {
		t.Errorf("%d kbroker_group_lag series, want the cap of 1:\n%s", n, grepLines(text, "kbroker_group_lag"))
	}
	if v, _ := sumSeries(text, "kbroker_group_lag_series_dropped"); v != 1 {
		t.Errorf("kbroker_group_lag_series_dropped = %v, want 1", v)
	}
	if _, n := sumSeries(text, "kbroker_group_lag", `group="first"`); n != 1 {
		t.Errorf("the series kept is not the first group's in name order:\n%s", grepLines(text, "kbroker_group_lag"))
	}
	waitForSeries(t, maddr, 2, "kbroker_groups", `state="Empty"`)

	// A member commit for a generation of a group that does not exist is
	// refused (ILLEGAL_GENERATION before OffsetCommit v9).
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation, req.MemberID = "nobody", 3, "m"
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "capped"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw := testkit.Client(t, addr)
	ctx := testkit.Context(t, 10*time.Second)
	coord := kmsg.NewPtrFindCoordinatorRequest()
	coord.CoordinatorKey = "nobody"
	if _, err := coord.RequestWith(ctx, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatal("a commit for a generation of an unknown group was accepted")
	}
	waitForSeries(t, maddr, 1, "kbroker_offset_commits_total", `result="error"`)
}
