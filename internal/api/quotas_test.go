package api_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

func str(s string) *string { return &s }

func setQuota(t *testing.T, adm *kadm.Client, entity kadm.ClientQuotaEntity, key string, value float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctx(t), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: value}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas %v %s=%v: %v %v %s", entity, key, value, err, res[0].Err, res[0].ErrMessage)
	}
}

func TestDescribeClientQuotasMatching(t *testing.T) {
	b := brokertest.Start(t, nil)
	_, adm := client(t, b)
	user := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "user", Name: n}
	}
	cid := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: n}
	}
	setQuota(t, adm, kadm.ClientQuotaEntity{user(str("alice"))}, "producer_byte_rate", 1024)
	setQuota(t, adm, kadm.ClientQuotaEntity{user(nil)}, "producer_byte_rate", 2048)
	setQuota(t, adm, kadm.ClientQuotaEntity{user(str("alice")), cid(str("c1"))}, "consumer_byte_rate", 4096)
	setQuota(t, adm, kadm.ClientQuotaEntity{cid(nil)}, "request_percentage", 50)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "ip", Name: str("127.0.0.1")}}, "connection_creation_rate", 5)

	count := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) int {
		t.Helper()
		got, err := adm.DescribeClientQuotas(ctx(t), strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	exact, def, anyName := kmsg.QuotasMatchTypeExact, kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny
	cases := []struct {
		name   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   int
	}{
		{"everything", false, nil, 5},
		{"user alice, not strict", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: str("alice"), MatchType: exact}}, 2},
		{"user alice, strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: str("alice"), MatchType: exact}}, 1},
		{"default user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: def}}, 1},
		{"any user includes the default", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: anyName}}, 3},
		{"any user, strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: anyName}}, 2},
		{"user and client", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: anyName}, {Type: "client-id", MatchName: str("c1"), MatchType: exact}}, 1},
		{"ip", false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: anyName}}, 1},
	}
	for _, c := range cases {
		if got := count(c.strict, c.comps...); got != c.want {
			t.Errorf("%s: %d entities, want %d", c.name, got, c.want)
		}
	}
	_, err := adm.DescribeClientQuotas(ctx(t), false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: exact}})
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("EXACT without a name: %v", err)
	}
	_, err = adm.DescribeClientQuotas(ctx(t), false, []kadm.DescribeClientQuotaComponent{{Type: "group", MatchType: anyName}})
	if !errors.Is(err, kerr.UnsupportedVersion) {
		t.Errorf("unknown entity type: %v", err)
	}
}

func TestAlterClientQuotasValidation(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"client.quota.subquota.mode": "reserved"})
	_, adm := client(t, b)
	u2 := kadm.ClientQuotaEntityComponent{Type: "user", Name: str("user2")}
	entry := func(e kadm.ClientQuotaEntity, key string, v float64) kadm.AlterClientQuotaEntry {
		return kadm.AlterClientQuotaEntry{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}
	}
	res, err := adm.AlterClientQuotas(ctx(t), []kadm.AlterClientQuotaEntry{
		entry(kadm.ClientQuotaEntity{u2}, "producer_byte_rate", 4096),
		entry(kadm.ClientQuotaEntity{{Type: "ip", Name: str("127.0.0.1")}}, "producer_byte_rate", 1),
		entry(kadm.ClientQuotaEntity{u2}, "consumer_byte_rate", -1),
		entry(kadm.ClientQuotaEntity{{Type: "client-id", Name: str("c")}}, "producer_byte_rate", 1.5),
		entry(kadm.ClientQuotaEntity{{Type: "user", Name: str("")}}, "producer_byte_rate", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	// One entity listed twice (user2) fails both; each bad entity fails alone.
	for i, r := range res {
		if !errors.Is(r.Err, kerr.InvalidRequest) {
			t.Errorf("entry %d: %v (%s), want INVALID_REQUEST", i, r.Err, r.ErrMessage)
		}
	}
	setQuota(t, adm, kadm.ClientQuotaEntity{u2}, "producer_byte_rate", 4096)
	setQuota(t, adm, kadm.ClientQuotaEntity{u2, {Type: "client-id", Name: str("clientA")}}, "producer_byte_rate", 10)
	res, _ = adm.AlterClientQuotas(ctx(t), []kadm.AlterClientQuotaEntry{
		entry(kadm.ClientQuotaEntity{u2, {Type: "client-id", Name: str("clientB")}}, "producer_byte_rate", 5000)})
	if !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, "user2") {
		t.Errorf("reserved mode: sub-quotas above the user total must be refused naming the user, got %v %q", res[0].Err, res[0].ErrMessage)
	}
	// validate-only changes nothing.
	if res, err := adm.ValidateAlterClientQuotas(ctx(t), []kadm.AlterClientQuotaEntry{entry(kadm.ClientQuotaEntity{u2}, "producer_byte_rate", 9999)}); err != nil || res[0].Err != nil {
		t.Fatalf("validate-only: %v %v", err, res)
	}
	got, _ := adm.DescribeClientQuotas(ctx(t), true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: str("user2"), MatchType: kmsg.QuotasMatchTypeExact}})
	if len(got) != 1 || got[0].Values[0].Value != 4096 {
		t.Fatalf("after validate-only: %v", got)
	}
}

// throttleCounter counts the throttles a kgo client was told of.
type throttleCounter struct{ n atomic.Int64 }

func (h *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

func TestProducerByteRateThrottles(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"metrics.listener": "127.0.0.1:0"})
	_, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	const rate = 200 << 10
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user", Name: str("ANONYMOUS")}, {Type: "client-id", Name: str("q1")}}, "producer_byte_rate", rate)
	hook := &throttleCounter{}
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("q1"), kgo.DefaultProduceTopic("q"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10), kgo.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	value := make([]byte, 1000)
	rand.Read(value)
	var acked atomic.Int64
	run, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	for run.Err() == nil {
		prod.Produce(run, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err == nil {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	elapsed := time.Since(start).Seconds()
	got := float64(acked.Load())
	// Generous bounds (precision is for the benchmark): at most the rate
	// plus one window of burst plus a batch, and a fair share of it.
	if max := rate*(elapsed+1)*1.25 + 32<<10; got > max {
		t.Errorf("produced %.0f bytes in %.1fs; the quota allows at most about %.0f", got, elapsed, max)
	}
	if min := rate * elapsed * 0.5; got < min {
		t.Errorf("produced only %.0f bytes in %.1fs; the quota allows %.0f", got, elapsed, rate*elapsed)
	}
	if hook.n.Load() == 0 {
		t.Error("the producer was never told of a throttle")
	}
	resp, err := http.Get("http://" + b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `client_id="q1"`) || !strings.Contains(string(body), "kbroker_quota_throttled_requests_total") {
		t.Error("/metrics lacks the per-entity quota series of client q1")
	}
}

func TestConsumerByteRateThrottlesAndQuotaChangesApplyLive(t *testing.T) {
	b := brokertest.Start(t, nil)
	_, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "f"); err != nil {
		t.Fatal(err)
	}
	prod, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("f"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1000)
	rand.Read(value)
	for i := 0; i < 2000; i++ {
		prod.Produce(ctx(t), &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	const rate = 300 << 10
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: str("c1")}}, "consumer_byte_rate", rate)
	cons, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("c1"), kgo.ConsumeTopics("f"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	var got int
	start := time.Now()
	for time.Since(start) < 2*time.Second {
		fctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cons.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
	}
	if max := float64(rate)*3*1.25 + 64<<10; float64(got) > max {
		t.Errorf("consumed %d bytes in 2s at a %d B/s quota (at most about %.0f)", got, rate, max)
	}
	if got < rate/2 {
		t.Errorf("consumed only %d bytes: a quota must throttle, not starve", got)
	}
	// Raising the quota on the live connection lets the rest through quickly.
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: str("c1")}}, "consumer_byte_rate", 1<<30)
	deadline := time.Now().Add(3 * time.Second)
	for got < 2000*1000 && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cons.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
	}
	if got < 2000*1000 {
		t.Errorf("after raising the quota only %d of %d bytes arrived", got, 2000*1000)
	}
}

func TestControllerMutationRate(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"quota.window.num": "2"})
	cl, adm := client(t, b)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user", Name: nil}}, "controller_mutation_rate", 2)
	// One request for three 4-partition topics against a burst of 4
	// partitions: the quota runs out within the request, and the topics
	// past that point are refused (strict mode, CreateTopics v6+).
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"m1", "m2", "m3"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 4, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var refused int
	for _, rt := range resp.Topics {
		if rt.ErrorCode == kerr.ThrottlingQuotaExceeded.Code {
			refused++
		}
	}
	if refused == 0 || refused == 3 || resp.ThrottleMillis <= 0 {
		t.Fatalf("%d of 3 topics refused, throttle %d ms: want the first admitted, a later one refused, and a throttle", refused, resp.ThrottleMillis)
	}
}

func TestConnectionCreationRate(t *testing.T) {
	b := brokertest.Start(t, nil)
	_, adm := client(t, b)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "ip", Name: str("127.0.0.1")}}, "connection_creation_rate", 2)
	served := 0
	for i := 0; i < 10; i++ {
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrApiVersionsRequest()
		frame := append([]byte{0, 0, 0, 0, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}, req.AppendTo(nil)...)
		frame[3] = byte(len(frame) - 4)
		nc.Write(frame)
		nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := nc.Read(make([]byte, 4)); err == nil {
			served++
		}
		nc.Close()
	}
	if served == 0 || served > 4 {
		t.Fatalf("%d of 10 rapid connections were served at 2 connections/s", served)
	}
}

func TestUserAndClientConfigResources(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"quota.user.producer.default": "5000"})
	cl, adm := client(t, b)
	if code, msg := incremental(t, cl, 7, "alice/clients/c1", false, op("producer_byte_rate", kmsg.IncrementalAlterConfigOpSet, "1000")); code != 0 {
		t.Fatalf("alter USER alice/clients/c1: %d %s", code, msg)
	}
	got, _ := adm.DescribeClientQuotas(ctx(t), true, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: str("alice"), MatchType: kmsg.QuotasMatchTypeExact},
		{Type: "client-id", MatchName: str("c1"), MatchType: kmsg.QuotasMatchTypeExact}})
	if len(got) != 1 || got[0].Values[0].Value != 1000 {
		t.Fatalf("the config resource must write the quota entity: %v", got)
	}
	cfgs, res := describe(t, cl, 7, "alice/clients/c1")
	if res.ErrorCode != 0 {
		t.Fatal(res.ErrorCode)
	}
	pb := cfgs["producer_byte_rate"]
	if val(pb) != "1000" || pb.Source != kmsg.ConfigSourceDynamicTopicConfig || len(pb.ConfigSynonyms) != 2 ||
		pb.ConfigSynonyms[0].Name != "users/alice/clients/c1" || pb.ConfigSynonyms[1].Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("producer_byte_rate of alice/c1: %s source %v synonyms %+v", val(pb), pb.Source, pb.ConfigSynonyms)
	}
	cfgs, _ = describe(t, cl, 7, "bob")
	if pb := cfgs["producer_byte_rate"]; val(pb) != "5000" || pb.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("bob inherits the static user default: %s %v", val(pb), pb.Source)
	}
	if cb := cfgs["consumer_byte_rate"]; cb.Value != nil || cb.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("an unlimited key has no value: %s %v", val(cb), cb.Source)
	}
	if code, _ := incremental(t, cl, 6, "c2", false, op("connection_creation_rate", kmsg.IncrementalAlterConfigOpSet, "1")); code != kerr.InvalidRequest.Code {
		t.Errorf("an ip-only key on a client: %d", code)
	}
}

func TestQuotasSurviveRestart(t *testing.T) {
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	b := brokertest.StartWith(t, props)
	_, adm := client(t, b)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user", Name: str("a*b c")}}, "producer_byte_rate", 77)
	b.Close()
	b2 := brokertest.StartWith(t, props, broker.WithLogger(nil2()))
	_, adm2 := client(t, b2)
	got, err := adm2.DescribeClientQuotas(ctx(t), false, nil)
	if err != nil || len(got) != 1 || *got[0].Entity[0].Name != "a*b c" || got[0].Values[0].Value != 77 {
		t.Fatalf("after restart: %v %v", got, err)
	}
}

func nil2() *slog.Logger { return slog.New(slog.DiscardHandler) }
