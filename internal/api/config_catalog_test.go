package api_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// TestConfigErrorsForAnUnknownTopicCarryAMessage: AlterConfigs,
// IncrementalAlterConfigs and DescribeConfigs of a topic that does not exist
// answer UNKNOWN_TOPIC_OR_PARTITION saying which topic, as Kafka's
// controller does ("The topic 'x' does not exist.").
func TestConfigErrorsForAnUnknownTopicCarryAMessage(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, _ := client(t, b)
	const want = "The topic 'nope' does not exist."

	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeTopic, "nope", false, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "1")); code != kerr.UnknownTopicOrPartition.Code || msg != want {
		t.Errorf("IncrementalAlterConfigs: %d %q, want %d %q", code, msg, kerr.UnknownTopicOrPartition.Code, want)
	}

	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "nope"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.ms", kmsg.StringPtr("1")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	kresp, err := cl.Broker(1).Request(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	r := kresp.(*kmsg.AlterConfigsResponse).Resources[0]
	if r.ErrorCode != kerr.UnknownTopicOrPartition.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("AlterConfigs: %d %v, want %d %q", r.ErrorCode, r.ErrorMessage, kerr.UnknownTopicOrPartition.Code, want)
	}

	if _, res := describe(t, cl, kmsg.ConfigResourceTypeTopic, "nope"); res.ErrorCode != kerr.UnknownTopicOrPartition.Code || res.ErrorMessage == nil || *res.ErrorMessage != want {
		t.Errorf("DescribeConfigs: %d %v, want %d %q", res.ErrorCode, res.ErrorMessage, kerr.UnknownTopicOrPartition.Code, want)
	}
}

// TestEveryKafkaBrokerConfigCanBeSetAtTheClusterDefault: the help example
// of kbroker configs (log.cleaner.threads=2 at the cluster default) and the
// other dynamic keys Kafka operators set, thread pools included, are
// accepted; DescribeConfigs of the broker then lists every catalog key, the
// altered one from DYNAMIC_DEFAULT_BROKER_CONFIG.
func TestEveryKafkaBrokerConfigCanBeSetAtTheClusterDefault(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, _ := client(t, b)
	set := kmsg.IncrementalAlterConfigOpSet
	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "", false,
		op("log.cleaner.threads", set, "2"), op("num.io.threads", set, "16"), op("num.network.threads", set, "6"),
		op("background.threads", set, "4"), op("num.replica.fetchers", set, "2"), op("log.cleaner.io.max.bytes.per.second", set, "1000000")); code != 0 {
		t.Fatalf("IncrementalAlterConfigs of the cluster default: %d %q", code, msg)
	}
	if code, msg := incremental(t, cl, kmsg.ConfigResourceTypeBroker, "", false, op("num.io.threads", set, "0")); code != kerr.InvalidConfig.Code {
		t.Errorf("num.io.threads=0: %d %q, want INVALID_CONFIG (Kafka requires at least 1)", code, msg)
	}
	cfgs, res := describe(t, cl, kmsg.ConfigResourceTypeBroker, "1")
	if res.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs broker 1: %d", res.ErrorCode)
	}
	for _, d := range config.Brokers.Defs() {
		if _, ok := cfgs[d.Name]; !ok {
			t.Errorf("DescribeConfigs broker 1 lacks %s", d.Name)
		}
	}
	threads := cfgs["log.cleaner.threads"]
	if threads.Value == nil || *threads.Value != "2" || threads.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("log.cleaner.threads = %v source %d, want 2 from DYNAMIC_DEFAULT_BROKER_CONFIG", threads.Value, threads.Source)
	}
	if io := cfgs["num.io.threads"]; io.ReadOnly {
		t.Error("num.io.threads reported read-only; Kafka changes it cluster-wide")
	}
	if otrf := cfgs["offsets.topic.replication.factor"]; !otrf.ReadOnly || otrf.Value == nil || *otrf.Value != "3" || otrf.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("offsets.topic.replication.factor = %v readOnly %v source %d, want read-only 3 from DEFAULT_CONFIG", otrf.Value, otrf.ReadOnly, otrf.Source)
	}
}

// TestInternalSegmentBytesIsDescribedOnlyWhereSet: segment.bytes below
// 1 MiB is refused (KIP-1030), Kafka's internal.segment.bytes takes a
// small segment instead, and only a topic that sets it lists it.
func TestInternalSegmentBytesIsDescribedOnlyWhereSet(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("4096")}, "small"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("segment.bytes=4096: %v, want INVALID_CONFIG", err)
	}
	if _, err := adm.CreateTopic(ctx(t), 1, 1, map[string]*string{"internal.segment.bytes": kmsg.StringPtr("4096")}, "small"); err != nil {
		t.Fatalf("internal.segment.bytes=4096: %v", err)
	}
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	small, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "small")
	if e, ok := small["internal.segment.bytes"]; !ok || e.Value == nil || *e.Value != "4096" || e.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("topic small: internal.segment.bytes = %+v, want 4096 from DYNAMIC_TOPIC_CONFIG", e)
	}
	plain, _ := describe(t, cl, kmsg.ConfigResourceTypeTopic, "plain")
	if _, ok := plain["internal.segment.bytes"]; ok {
		t.Error("topic plain, which does not set it, lists internal.segment.bytes")
	}
}
