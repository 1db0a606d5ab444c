package api_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
	"kbroker/policy"
)

func client(t *testing.T, b *broker.Broker) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl := testkit.Client(t, b.Addr())
	return cl, kadm.NewClient(cl)
}

func ctx(t *testing.T) context.Context {
	return testkit.Context(t, 20*time.Second)
}

// describe returns every config of one resource, with synonyms and docs.
func describe(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, kmsg.DescribeConfigsResponseResource) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	// Sent to broker 1 itself: kgo would route a named broker resource to
	// that broker id, which need not exist.
	kresp, err := cl.Broker(1).Request(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeConfigsResponse)
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out, resp.Resources[0]
}

// incremental sends one IncrementalAlterConfigs resource and returns its error.
func incremental(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, ops
	req.Resources = append(req.Resources, rr)
	kresp, err := cl.Broker(1).Request(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	r := kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

func op(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, o
	if o != kmsg.IncrementalAlterConfigOpDelete {
		c.Value = &value
	}
	return c
}

func val(c kmsg.DescribeConfigsResponseResourceConfig) string {
	if c.Value == nil {
		return "<null>"
	}
	return *c.Value
}

func TestDescribeTopicConfigsReportsEveryKeyWithSourcesAndSynonyms(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"log.retention.hours": "1", "my.custom.plugin.secret": "s3cr3t"})
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "t"); err != nil {
		t.Fatal(err)
	}
	cfgs, res := describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if res.ErrorCode != 0 || len(cfgs) != len(config.Topics.Defs()) {
		t.Fatalf("error %d, %d configs; want every one of the %d topic configs", res.ErrorCode, len(cfgs), len(config.Topics.Defs()))
	}
	ret := cfgs["retention.ms"]
	if val(ret) != "3600000" || ret.Source != kmsg.ConfigSourceStaticBrokerConfig || ret.ReadOnly {
		t.Errorf("retention.ms = %s source %v read-only %v; want 3600000 from log.retention.hours=1 (static)", val(ret), ret.Source, ret.ReadOnly)
	}
	if len(ret.ConfigSynonyms) != 2 || ret.ConfigSynonyms[0].Name != "log.retention.hours" || *ret.ConfigSynonyms[0].Value != "1" ||
		ret.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms synonyms = %+v", ret.ConfigSynonyms)
	}
	cp := cfgs["cleanup.policy"]
	if val(cp) != "compact" || cp.Source != kmsg.ConfigSourceDynamicTopicConfig || cp.ConfigType != kmsg.ConfigTypeList || cp.Documentation == nil {
		t.Errorf("cleanup.policy = %s source %v type %v doc %v", val(cp), cp.Source, cp.ConfigType, cp.Documentation)
	}
	if seg := cfgs["segment.bytes"]; val(seg) != "1073741824" || seg.Source != kmsg.ConfigSourceDefaultConfig || seg.ConfigType != kmsg.ConfigTypeInt {
		t.Errorf("segment.bytes = %s source %v type %v", val(seg), seg.Source, seg.ConfigType)
	}

	brokerCfgs, _ := describe(t, cl, kmsg.ConfigResourceTypeBroker, "1")
	if lrh := brokerCfgs["log.retention.hours"]; val(lrh) != "1" || !lrh.ReadOnly || lrh.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("broker log.retention.hours = %s read-only %v source %v", val(lrh), lrh.ReadOnly, lrh.Source)
	}
	if custom := brokerCfgs["my.custom.plugin.secret"]; !custom.IsSensitive || custom.Value != nil {
		t.Errorf("a key no catalog knows must be reported sensitive with a null value, got %+v", custom)
	}
	if lrm := brokerCfgs["log.retention.ms"]; lrm.ReadOnly || lrm.Value != nil {
		t.Errorf("log.retention.ms = %s read-only %v; want null and dynamic", val(lrm), lrm.ReadOnly)
	}

	// Key filter, unknown keys silently left out.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms", "no.such.key"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil || len(resp.Resources[0].Configs) != 1 || resp.Resources[0].Configs[0].ConfigSynonyms != nil {
		t.Fatalf("filtered describe: err %v, %+v", err, resp)
	}
}

func TestDescribeConfigsErrors(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, _ := client(t, b)
	if _, res := describe(t, cl, kmsg.ConfigResourceTypeTopic, "missing"); res.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: code %d", res.ErrorCode)
	}
	if _, res := describe(t, cl, kmsg.ConfigResourceTypeTopic, "bad/name"); res.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("illegal topic name: code %d", res.ErrorCode)
	}
	if _, res := describe(t, cl, kmsg.ConfigResourceTypeBroker, "7"); res.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("other broker id: code %d", res.ErrorCode)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBroker, 64} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, "1"
		req.Resources = append(req.Resources, rr)
	}
	kresp, err := cl.Broker(1).Request(ctx(t), req) // one request: kgo would split it by type
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range kresp.(*kmsg.DescribeConfigsResponse).Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("an unknown resource type must fail the whole request; resource %v got %d", r.ResourceType, r.ErrorCode)
		}
	}
}

func TestIncrementalAlterTopicConfigs(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	app, sub := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract

	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("retention.ms", set, "1000"), op("segment.ms", set, "60000")); code != 0 {
		t.Fatalf("SET: %d %s", code, msg)
	}
	cfgs, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if r := cfgs["retention.ms"]; val(r) != "1000" || r.Source != kmsg.ConfigSourceDynamicTopicConfig || r.ConfigSynonyms[0].Name != "retention.ms" {
		t.Fatalf("after SET retention.ms = %s source %v", val(r), r.Source)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("retention.ms", del, "")); code != 0 {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("no.such.key", del, "")); code != 0 {
		t.Fatalf("DELETE of an absent key must be a no-op, got %d", code)
	}
	cfgs, _ = describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if r := cfgs["retention.ms"]; val(r) != "604800000" || r.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after DELETE retention.ms = %s source %v", val(r), r.Source)
	}
	if val(cfgs["segment.ms"]) != "60000" {
		t.Fatalf("DELETE of one key touched another: segment.ms = %s", val(cfgs["segment.ms"]))
	}

	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("cleanup.policy", app, "compact")); code != 0 {
		t.Fatalf("APPEND: %d %s", code, msg)
	}
	cfgs, _ = describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if v := val(cfgs["cleanup.policy"]); v != "delete,compact" {
		t.Fatalf("APPEND starts from the default: cleanup.policy = %s", v)
	}
	incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("cleanup.policy", sub, "delete"))
	cfgs, _ = describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if v := val(cfgs["cleanup.policy"]); v != "compact" {
		t.Fatalf("SUBTRACT: cleanup.policy = %s", v)
	}

	cases := []struct {
		name string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{"unknown key", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.msec", set, "1")}, kerr.InvalidConfig.Code, "Unknown topic config name: retention.msec"},
		{"wrong type", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", set, "soon")}, kerr.InvalidConfig.Code, "Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"out of range", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("segment.bytes", set, "1")}, kerr.InvalidConfig.Code, "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"},
		{"append to non-list", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", app, "1")}, kerr.InvalidConfig.Code, "because its type is not LIST"},
		{"duplicate key", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", set, "1"), op("retention.ms", set, "2")}, kerr.InvalidRequest.Code, "duplicate config keys"},
		{"one bad key fails the resource", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", set, "5"), op("segment.bytes", set, "1")}, kerr.InvalidConfig.Code, "segment.bytes"},
	}
	for _, c := range cases {
		code, msg := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, c.ops...)
		if code != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: got %d %q, want %d containing %q", c.name, code, msg, c.code, c.msg)
		}
	}
	cfgs, _ = describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if v := val(cfgs["retention.ms"]); v != "604800000" {
		t.Errorf("a failed resource must change nothing; retention.ms = %s", v)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "nope", false, op("retention.ms", set, "1")); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %d", code)
	}

	// validate-only checks but leaves no trace.
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", true, op("retention.ms", set, "777")); code != 0 {
		t.Fatalf("validate-only: %d", code)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", true, op("retention.ms", set, "x")); code != kerr.InvalidConfig.Code {
		t.Fatalf("validate-only must still validate: %d", code)
	}
	cfgs, _ = describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if v := val(cfgs["retention.ms"]); v != "604800000" {
		t.Errorf("validate-only changed retention.ms to %s", v)
	}
}

func TestAlterConfigsReplacesTheWholeSetAndDuplicatesFail(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000"), "segment.ms": kadm.StringPtr("2000")}, "t"); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigsState(ctx(t), []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("3000")}}, "t")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %v", err, resps)
	}
	cfgs, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
	if val(cfgs["segment.ms"]) != "3000" || cfgs["retention.ms"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("AlterConfigs must replace the set: segment.ms=%s retention.ms source %v", val(cfgs["segment.ms"]), cfgs["retention.ms"].Source)
	}

	req := kmsg.NewPtrAlterConfigsRequest()
	for i := 0; i < 2; i++ {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("a resource listed twice: both copies must get INVALID_REQUEST, got %d", r.ErrorCode)
		}
	}
	if cfgs, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "t"); val(cfgs["segment.ms"]) != "3000" {
		t.Errorf("the refused duplicate changed segment.ms to %s", val(cfgs["segment.ms"]))
	}
}

func TestBrokerConfigLevels(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"log.retention.ms": "50000"})
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	topicRetention := func() kmsg.DescribeConfigsResponseResourceConfig {
		cfgs, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "t")
		return cfgs["retention.ms"]
	}
	if r := topicRetention(); val(r) != "50000" || r.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("static: %s %v", val(r), r.Source)
	}
	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "", false, op("log.retention.ms", set, "60000")); code != 0 {
		t.Fatalf("cluster default: %d %s", code, msg)
	}
	if r := topicRetention(); val(r) != "60000" || r.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster default: %s %v", val(r), r.Source)
	}
	defaults, _ := describe(t, cl, kmsg.ConfigResourceTypeBroker, "")
	if len(defaults) != 1 || val(defaults["log.retention.ms"]) != "60000" {
		t.Fatalf("describing broker \"\" must list only the cluster defaults, got %v", defaults)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "1", false, op("log.retention.ms", set, "70000")); code != 0 {
		t.Fatalf("per-broker: %d", code)
	}
	if r := topicRetention(); val(r) != "70000" || r.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(r.ConfigSynonyms) != 4 {
		t.Fatalf("per-broker: %s %v %+v", val(r), r.Source, r.ConfigSynonyms)
	}

	cases := []struct {
		name, resource, key, value string
		code                       int16
	}{
		{"read-only key", "1", "log.dirs", "/tmp/x", kerr.InvalidRequest.Code},
		{"per-broker key at the default", "", "listeners", "PLAINTEXT://:1", kerr.InvalidRequest.Code},
		{"unknown key", "1", "log.retention.weeks", "1", kerr.InvalidConfig.Code},
		{"bad value", "", "log.retention.ms", "forever", kerr.InvalidConfig.Code},
		{"another broker", "2", "log.retention.ms", "1", kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBroker, c.resource, false, op(c.key, set, c.value)); code != c.code {
			t.Errorf("%s: got %d %q, want %d", c.name, code, msg, c.code)
		}
	}
}

func TestBrokerLoggerLevels(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, _ := client(t, b)
	loggers, res := describe(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1")
	root := val(loggers["root"])
	if res.ErrorCode != 0 || root == "<null>" || val(loggers["kbroker.wire"]) != root {
		t.Fatalf("loggers: %d %v", res.ErrorCode, loggers)
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1", false, op("kbroker.wire", set, "WARN")); code != 0 {
		t.Fatalf("SET level: %d %s", code, msg)
	}
	if loggers, _ = describe(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1"); val(loggers["kbroker.wire"]) != "WARN" || loggers["kbroker.wire"].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Fatalf("after SET: %+v", loggers["kbroker.wire"])
	}
	incremental(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1", false, op("kbroker.wire", del, ""))
	if loggers, _ = describe(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1"); val(loggers["kbroker.wire"]) != root {
		t.Fatalf("DELETE must return to the root level: %s", val(loggers["kbroker.wire"]))
	}
	for _, c := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
	}{
		{op("kbroker.wire", set, "LOUD"), kerr.InvalidConfig.Code},
		{op("no.such.logger", set, "INFO"), kerr.InvalidConfig.Code},
		{op("root", del, ""), kerr.InvalidRequest.Code},
		{op("kbroker.wire", kmsg.IncrementalAlterConfigOpAppend, "INFO"), kerr.InvalidRequest.Code},
	} {
		if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "1", false, c.op); code != c.code {
			t.Errorf("%s %v: got %d %q, want %d", c.op.Name, c.op.Op, code, msg, c.code)
		}
	}
}

func TestPoliciesRejectPerResource(t *testing.T) {
	alter := policy.AlterConfigFunc(func(r policy.AlterConfigRequest) error {
		if v := r.Configs["retention.ms"]; v != nil && *v == "1" {
			return errors.New("retention.ms below one second is not allowed here")
		}
		return nil
	})
	create := policy.CreateTopicFunc(func(r policy.CreateTopicRequest) error {
		if r.NumPartitions != nil && *r.NumPartitions > 8 {
			return errors.New("at most 8 partitions")
		}
		return nil
	})
	b := brokertest.StartWith(t, config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}, broker.WithAlterConfigPolicy(alter), broker.WithCreateTopicPolicy(create))
	cl, adm := client(t, b)
	if resp, _ := adm.CreateTopic(ctx(t), 9, 1, nil, "big"); !errors.Is(resp.Err, kerr.PolicyViolation) || resp.ErrMessage != "at most 8 partitions" {
		t.Fatalf("create policy: %v %q", resp.Err, resp.ErrMessage)
	}
	if _, err := adm.CreateTopic(ctx(t), 2, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx(t), 2, 1, nil, "b"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"a", "b"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		v := map[string]string{"a": "1", "b": "5000"}[name]
		rr.Configs = append(rr.Configs, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, v))
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Resources[0]; r.ErrorCode != kerr.PolicyViolation.Code || *r.ErrorMessage != "retention.ms below one second is not allowed here" {
		t.Errorf("policy on a: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := resp.Resources[1]; r.ErrorCode != 0 {
		t.Errorf("b must succeed independently of a: %d", r.ErrorCode)
	}
}

func TestTopicConfigsPersistAcrossRestartAndTakeEffect(t *testing.T) {
	dir := t.TempDir()
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := brokertest.StartWith(t, props)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("max.message.bytes", kmsg.IncrementalAlterConfigOpSet, "200")); code != 0 {
		t.Fatal(code)
	}
	// Random bytes, so that kgo's default compression cannot shrink the
	// batch below the limit.
	big := &kgo.Record{Topic: "t", Value: make([]byte, 1000)}
	rand.Read(big.Value)
	if err := cl.ProduceSync(ctx(t), big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a batch above max.message.bytes must get MESSAGE_TOO_LARGE, got %v", err)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := brokertest.StartWith(t, props)
	cl2, _ := client(t, b2)
	cfgs, _ := describe(t, cl2, kmsg.ConfigResourceTypeTopic, "t")
	if v := cfgs["max.message.bytes"]; val(v) != "200" || v.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("after restart max.message.bytes = %s source %v", val(v), v.Source)
	}
	if err := cl2.ProduceSync(ctx(t), big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("after restart: %v", err)
	}
	if code, _ := incremental(t, cl2, kmsg.ConfigResourceTypeTopic, "t", false, op("max.message.bytes", kmsg.IncrementalAlterConfigOpDelete, "")); code != 0 {
		t.Fatal(code)
	}
	if err := cl2.ProduceSync(ctx(t), big).FirstErr(); err != nil {
		t.Fatalf("after deleting the override the record must fit: %v", err)
	}
}

func TestMinInsyncReplicasRefusesAcksAll(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "t"); err != nil {
		t.Fatal(err)
	}
	all, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(1), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if err := all.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with min.insync.replicas=2 on one replica: got %v, want NOT_ENOUGH_REPLICAS", err)
	}
	leader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	if err := leader.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 is not bound by min.insync.replicas: %v", err)
	}
	// Lowering it takes effect at once.
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("min.insync.replicas", kmsg.IncrementalAlterConfigOpDelete, "")); code != 0 {
		t.Fatal(code)
	}
	if err := all.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("after the override is removed: %v", err)
	}
}

func TestMaxConnectionsPerIPIsDynamic(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, _ := client(t, b)
	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "", false, op("max.connections.per.ip", kmsg.IncrementalAlterConfigOpSet, "2")); code != 0 {
		t.Fatalf("%d %s", code, msg)
	}
	// cl holds one connection (more if it opened several); open raw ones
	// until the broker refuses, which must happen by the third.
	refused := false
	for i := 0; i < 3 && !refused; i++ {
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = nc.Read(make([]byte, 1))
		refused = errors.Is(err, io.EOF)
	}
	if !refused {
		t.Fatal("no connection was refused with max.connections.per.ip=2")
	}
	if code, _ := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "", false, op("max.connections.per.ip", kmsg.IncrementalAlterConfigOpDelete, "")); code != 0 {
		t.Fatalf("the existing connection must keep working: %d", code)
	}
	nc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := nc.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
		t.Fatal("connections still refused after the limit was removed")
	}
}

func TestAppliedConfigChangesAreAuditedOnce(t *testing.T) {
	var logs testkit.LogBuffer
	b := brokertest.Start(t, nil, broker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "1000"))
	incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", true, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "2000"))
	incremental(t, cl, kmsg.ConfigResourceTypeTopic, "t", false, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "bad"))
	var audit []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "logger=kbroker.audit") {
			audit = append(audit, line)
		}
	}
	if len(audit) != 1 {
		t.Fatalf("want exactly one audit line (validate-only and failed changes are not applied), got %q", audit)
	}
	for _, want := range []string{"principal=User:ANONYMOUS", "resource_type=topic", "resource=t", "key=retention.ms", "old=null", "new=1000"} {
		if !strings.Contains(audit[0], want) {
			t.Errorf("audit line %q lacks %q", audit[0], want)
		}
	}
}
