package interop

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"kbroker/internal/config"
)

// saramaConfigProps are the broker properties of the sarama config tests: a
// static retention in hours (a synonym of retention.ms in another unit) and
// a key no catalog knows, which must be reported sensitive with no value.
var saramaConfigProps = config.Properties{
	"log.retention.hours": "48",
	"ssl.key.password":    "hunter2",
}

// 48 hours, the static log.retention.hours, in the unit of retention.ms.
const staticRetentionMs = "172800000"

// sarama's ClusterAdmin reads and changes topic, broker and cluster-default
// configs and sees what a Kafka broker would show: values, sources,
// synonyms, read-only and sensitive flags, full-replace AlterConfigs,
// validate-only leaving no trace, IncrementalAlterConfigs operations, and
// errors as sarama's typed errors. Each sarama version picks different
// request versions: 2.3 sends DescribeConfigs v2, AlterConfigs v1,
// IncrementalAlterConfigs v0 and CreateTopics v3; 2.8 and the newest send
// the flexible versions (v4, v2, v1, v7).
func TestSaramaClusterAdminConfigs(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.V2_3_0_0, sarama.V2_8_0_0, sarama.MaxVersion} {
		t.Run(v.String(), func(t *testing.T) {
			addr := startBroker(t, saramaConfigProps)
			cfg := sarama.NewConfig()
			cfg.ClientID = "kbroker-interop-configs"
			cfg.Version = v
			admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewClusterAdmin: %v", err)
			}
			t.Cleanup(func() { admin.Close() })
			s := saramaConfigs{t: t, admin: admin}

			t.Run("create topic with configs", s.createTopicWithConfigs)
			t.Run("describe topic", s.describeTopic)
			t.Run("describe topic with synonyms", s.describeTopicSynonyms)
			t.Run("describe broker", s.describeBroker)
			t.Run("alter topic replaces all overrides", s.alterTopic)
			t.Run("alter cluster default", s.alterClusterDefault)
			t.Run("incremental alter topic", s.incrementalAlterTopic)
			t.Run("errors", s.errors)
			t.Run("broker loggers", s.brokerLoggers)
		})
	}
}

type saramaConfigs struct {
	t     *testing.T
	admin sarama.ClusterAdmin
}

const saramaTopic = "sarama-configs"

func (s saramaConfigs) createTopicWithConfigs(t *testing.T) {
	err := s.admin.CreateTopic(saramaTopic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": sp("3600000"), "cleanup.policy": sp("compact")}}, false)
	if err != nil {
		t.Fatalf("CreateTopic with valid ConfigEntries: %v", err)
	}
	got := s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "retention.ms", "3600000", sarama.SourceTopic)
	wantConfig(t, got, "cleanup.policy", "compact", sarama.SourceTopic)

	for _, c := range []struct {
		name    string
		configs map[string]*string
	}{
		{"unknown key", map[string]*string{"no.such.config": sp("1")}},
		{"value of the wrong type", map[string]*string{"retention.ms": sp("soon")}},
		{"value out of range", map[string]*string{"segment.bytes": sp("13")}},
		{"value not allowed", map[string]*string{"cleanup.policy": sp("shred")}},
	} {
		topic := "sarama-bad-" + strings.ReplaceAll(c.name, " ", "-")
		err := s.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: c.configs}, false)
		if !errors.Is(err, sarama.ErrInvalidConfig) {
			t.Errorf("CreateTopic with an invalid config (%s): %v, want %v", c.name, err, sarama.ErrInvalidConfig)
		}
		if _, err := s.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic}); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			t.Errorf("after a refused CreateTopic (%s), DescribeConfig of %s: %v, want %v", c.name, topic, err, sarama.ErrUnknownTopicOrPartition)
		}
	}
}

func (s saramaConfigs) describeTopic(t *testing.T) {
	got := s.describe(t, sarama.TopicResource, saramaTopic)
	if len(got) < 30 {
		t.Errorf("DescribeConfig of a topic returned %d configs, want every topic config (30+)", len(got))
	}
	wantConfig(t, got, "retention.ms", "3600000", sarama.SourceTopic)
	wantConfig(t, got, "segment.bytes", "1073741824", sarama.SourceDefault)
	wantConfig(t, got, "max.message.bytes", "1048588", sarama.SourceDefault)
	wantConfig(t, got, "message.timestamp.type", "CreateTime", sarama.SourceDefault)
	for name, e := range got {
		if e.ReadOnly || e.Sensitive {
			t.Errorf("topic config %s: ReadOnly %v Sensitive %v, want neither (no topic config is)", name, e.ReadOnly, e.Sensitive)
		}
		if len(e.Synonyms) != 0 {
			t.Errorf("topic config %s: %d synonyms without IncludeSynonyms, want none", name, len(e.Synonyms))
		}
	}
	if e := got["segment.bytes"]; !e.Default {
		t.Errorf("segment.bytes: Default false, want true for a DEFAULT_CONFIG value")
	}
	if e := got["retention.ms"]; e.Default {
		t.Errorf("retention.ms: Default true, want false for a topic override")
	}
	// Only the keys asked for.
	entries, err := s.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: saramaTopic,
		ConfigNames: []string{"retention.ms", "cleanup.policy"}})
	if err != nil {
		t.Fatalf("DescribeConfig with ConfigNames: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"cleanup.policy", "retention.ms"}) {
		t.Errorf("DescribeConfig with ConfigNames [retention.ms cleanup.policy] returned %v", names)
	}
}

func (s saramaConfigs) describeTopicSynonyms(t *testing.T) {
	got := s.describeWithSynonyms(t, sarama.TopicResource, saramaTopic)
	// The override first, then every broker-level place that sets the
	// value. kbroker also lists the static log.retention.hours (Kafka hides
	// synonyms spelled differently from log.retention.ms), so the source of
	// an inherited value is never hidden.
	wantSynonyms(t, got, "retention.ms", []sarama.ConfigSynonym{
		{ConfigName: "retention.ms", ConfigValue: "3600000", Source: sarama.SourceTopic},
		{ConfigName: "log.retention.hours", ConfigValue: "48", Source: sarama.SourceStaticBroker},
		{ConfigName: "log.retention.hours", ConfigValue: "168", Source: sarama.SourceDefault},
	})
	wantSynonyms(t, got, "cleanup.policy", []sarama.ConfigSynonym{
		{ConfigName: "cleanup.policy", ConfigValue: "compact", Source: sarama.SourceTopic},
		{ConfigName: "log.cleanup.policy", ConfigValue: "delete", Source: sarama.SourceDefault},
	})
	wantSynonyms(t, got, "segment.bytes", []sarama.ConfigSynonym{
		{ConfigName: "log.segment.bytes", ConfigValue: "1073741824", Source: sarama.SourceDefault},
	})
	wantSynonyms(t, got, "max.message.bytes", []sarama.ConfigSynonym{
		{ConfigName: "message.max.bytes", ConfigValue: "1048588", Source: sarama.SourceDefault},
	})
}

func (s saramaConfigs) describeBroker(t *testing.T) {
	got := s.describeWithSynonyms(t, sarama.BrokerResource, "1")
	want := func(name, value string, source sarama.ConfigSource, readOnly bool) {
		t.Helper()
		wantConfig(t, got, name, value, source)
		if e, ok := got[name]; ok && e.ReadOnly != readOnly {
			t.Errorf("broker config %s: ReadOnly %v, want %v", name, e.ReadOnly, readOnly)
		}
	}
	want("log.retention.hours", "48", sarama.SourceStaticBroker, true)
	want("node.id", "1", sarama.SourceDefault, true)
	want("max.connections", "2147483647", sarama.SourceDefault, false)
	want("log.segment.bytes", "1073741824", sarama.SourceDefault, false)
	want("num.partitions", "1", sarama.SourceDefault, true)
	wantSynonyms(t, got, "log.retention.hours", []sarama.ConfigSynonym{
		{ConfigName: "log.retention.hours", ConfigValue: "48", Source: sarama.SourceStaticBroker},
		{ConfigName: "log.retention.hours", ConfigValue: "168", Source: sarama.SourceDefault},
	})
	if e := got["log.retention.ms"]; e.ReadOnly || e.Source != sarama.SourceDefault {
		t.Errorf("broker config log.retention.ms: ReadOnly %v Source %v, want a dynamic key with no value set (DEFAULT_CONFIG)", e.ReadOnly, e.Source)
	}
	if e := got["log.dirs"]; e.Source != sarama.SourceStaticBroker || e.Value == "" || !e.ReadOnly {
		t.Errorf("broker config log.dirs: %+v, want the static value, read-only", e)
	}
	// A key no catalog knows may hold a secret: sensitive, no value.
	e, ok := got["ssl.key.password"]
	switch {
	case !ok:
		t.Errorf("broker describe lacks the static key ssl.key.password")
	case !e.Sensitive || e.Value != "":
		t.Errorf("ssl.key.password: Sensitive %v Value %q, want sensitive with no value", e.Sensitive, e.Value)
	}
	for name, e := range got {
		if e.Value == "hunter2" || slices.ContainsFunc(e.Synonyms, func(s *sarama.ConfigSynonym) bool { return s.ConfigValue == "hunter2" }) {
			t.Errorf("broker config %s shows the secret value of ssl.key.password", name)
		}
	}
	// The cluster default lists only the keys set there: none yet.
	if d := s.describe(t, sarama.BrokerResource, ""); len(d) != 0 {
		t.Errorf("cluster-default broker configs on a fresh broker: %v, want none", names(d))
	}
}

func (s saramaConfigs) alterTopic(t *testing.T) {
	replace := map[string]*string{"max.message.bytes": sp("2048")}
	if err := s.admin.AlterConfig(sarama.TopicResource, saramaTopic, replace, true); err != nil {
		t.Fatalf("AlterConfig validateOnly: %v", err)
	}
	got := s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "retention.ms", "3600000", sarama.SourceTopic)
	wantConfig(t, got, "cleanup.policy", "compact", sarama.SourceTopic)
	wantConfig(t, got, "max.message.bytes", "1048588", sarama.SourceDefault)

	if err := s.admin.AlterConfig(sarama.TopicResource, saramaTopic, replace, false); err != nil {
		t.Fatalf("AlterConfig: %v", err)
	}
	got = s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "max.message.bytes", "2048", sarama.SourceTopic)
	// Keys left out of a full replace lose their override.
	wantConfig(t, got, "retention.ms", staticRetentionMs, sarama.SourceStaticBroker)
	wantConfig(t, got, "cleanup.policy", "delete", sarama.SourceDefault)

	// All keys of a resource apply or none do.
	err := s.admin.AlterConfig(sarama.TopicResource, saramaTopic,
		map[string]*string{"max.message.bytes": sp("4096"), "retention.ms": sp("soon")}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) || !strings.Contains(err.Error(), "retention.ms") {
		t.Errorf("AlterConfig with one invalid value: %v, want %v naming retention.ms", err, sarama.ErrInvalidConfig)
	}
	got = s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "max.message.bytes", "2048", sarama.SourceTopic)
}

func (s saramaConfigs) alterClusterDefault(t *testing.T) {
	defaults := map[string]*string{"log.retention.ms": sp("86400000"), "log.segment.bytes": sp("1048576")}
	if err := s.admin.AlterConfig(sarama.BrokerResource, "", defaults, true); err != nil {
		t.Fatalf("AlterConfig of the cluster default, validateOnly: %v", err)
	}
	if d := s.describe(t, sarama.BrokerResource, ""); len(d) != 0 {
		t.Errorf("after a validate-only AlterConfig the cluster default has %v, want nothing", names(d))
	}
	wantConfig(t, s.describe(t, sarama.TopicResource, saramaTopic), "retention.ms", staticRetentionMs, sarama.SourceStaticBroker)

	if err := s.admin.AlterConfig(sarama.BrokerResource, "", defaults, false); err != nil {
		t.Fatalf("AlterConfig of the cluster default: %v", err)
	}
	d := s.describe(t, sarama.BrokerResource, "")
	if got := names(d); !slices.Equal(got, []string{"log.retention.ms", "log.segment.bytes"}) {
		t.Errorf("cluster-default broker configs: %v, want [log.retention.ms log.segment.bytes]", got)
	}
	wantConfig(t, d, "log.retention.ms", "86400000", sarama.SourceDynamicDefaultBroker)
	wantConfig(t, d, "log.segment.bytes", "1048576", sarama.SourceDynamicDefaultBroker)
	// Synonyms of the cluster default are only those set at that level.
	dd := s.describeWithSynonyms(t, sarama.BrokerResource, "")
	wantSynonyms(t, dd, "log.retention.ms", []sarama.ConfigSynonym{
		{ConfigName: "log.retention.ms", ConfigValue: "86400000", Source: sarama.SourceDynamicDefaultBroker},
	})
	b1 := s.describeWithSynonyms(t, sarama.BrokerResource, "1")
	wantConfig(t, b1, "log.retention.ms", "86400000", sarama.SourceDynamicDefaultBroker)
	wantSynonyms(t, b1, "log.retention.ms", []sarama.ConfigSynonym{
		{ConfigName: "log.retention.ms", ConfigValue: "86400000", Source: sarama.SourceDynamicDefaultBroker},
		{ConfigName: "log.retention.hours", ConfigValue: "48", Source: sarama.SourceStaticBroker},
		{ConfigName: "log.retention.hours", ConfigValue: "168", Source: sarama.SourceDefault},
	})
	topic := s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, topic, "retention.ms", "86400000", sarama.SourceDynamicDefaultBroker)
	wantConfig(t, topic, "segment.bytes", "1048576", sarama.SourceDynamicDefaultBroker)

	// This broker's own value beats the cluster default.
	if err := s.admin.AlterConfig(sarama.BrokerResource, "1", map[string]*string{"log.retention.ms": sp("7200000")}, false); err != nil {
		t.Fatalf("AlterConfig of broker 1: %v", err)
	}
	wantConfig(t, s.describe(t, sarama.BrokerResource, "1"), "log.retention.ms", "7200000", sarama.SourceDynamicBroker)
	wantConfig(t, s.describe(t, sarama.TopicResource, saramaTopic), "retention.ms", "7200000", sarama.SourceDynamicBroker)

	// Full replace at both levels: what is left out goes.
	if err := s.admin.AlterConfig(sarama.BrokerResource, "1", map[string]*string{}, false); err != nil {
		t.Fatalf("AlterConfig of broker 1 with no keys: %v", err)
	}
	if err := s.admin.AlterConfig(sarama.BrokerResource, "", map[string]*string{"log.segment.bytes": sp("1048576")}, false); err != nil {
		t.Fatalf("AlterConfig of the cluster default: %v", err)
	}
	if got := names(s.describe(t, sarama.BrokerResource, "")); !slices.Equal(got, []string{"log.segment.bytes"}) {
		t.Errorf("cluster-default broker configs after replacing them: %v, want [log.segment.bytes]", got)
	}
	topic = s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, topic, "retention.ms", staticRetentionMs, sarama.SourceStaticBroker)
	wantConfig(t, topic, "segment.bytes", "1048576", sarama.SourceDynamicDefaultBroker)
	if err := s.admin.AlterConfig(sarama.BrokerResource, "", map[string]*string{}, false); err != nil {
		t.Fatalf("AlterConfig of the cluster default with no keys: %v", err)
	}
	wantConfig(t, s.describe(t, sarama.TopicResource, saramaTopic), "segment.bytes", "1073741824", sarama.SourceDefault)
}

func (s saramaConfigs) incrementalAlterTopic(t *testing.T) {
	alter := func(entries map[string]sarama.IncrementalAlterConfigsEntry, validateOnly bool) {
		t.Helper()
		if err := s.admin.IncrementalAlterConfig(sarama.TopicResource, saramaTopic, entries, validateOnly); err != nil {
			t.Fatalf("IncrementalAlterConfig %v (validateOnly %v): %v", entries, validateOnly, err)
		}
	}
	set := func(v string) sarama.IncrementalAlterConfigsEntry {
		return sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: sp(v)}
	}
	appendOp := func(v string) sarama.IncrementalAlterConfigsEntry {
		return sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationAppend, Value: sp(v)}
	}
	deleteOp := sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}

	alter(map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms":      set("7200000"),
		"max.message.bytes": deleteOp,
		"cleanup.policy":    appendOp("compact"),
	}, false)
	got := s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "retention.ms", "7200000", sarama.SourceTopic)
	wantConfig(t, got, "max.message.bytes", "1048588", sarama.SourceDefault)
	// APPEND starts from the default ("delete") when there is no override.
	wantConfig(t, got, "cleanup.policy", "delete,compact", sarama.SourceTopic)

	alter(map[string]sarama.IncrementalAlterConfigsEntry{"segment.bytes": set("2000000"), "retention.ms": deleteOp}, true)
	got = s.describe(t, sarama.TopicResource, saramaTopic)
	wantConfig(t, got, "segment.bytes", "1073741824", sarama.SourceDefault)
	wantConfig(t, got, "retention.ms", "7200000", sarama.SourceTopic)

	// APPEND of an item already there changes nothing; SUBTRACT removes;
	// DELETE of a key without an override is a no-op.
	alter(map[string]sarama.IncrementalAlterConfigsEntry{"cleanup.policy": appendOp("compact"), "max.message.bytes": deleteOp}, false)
	wantConfig(t, s.describe(t, sarama.TopicResource, saramaTopic), "cleanup.policy", "delete,compact", sarama.SourceTopic)
	alter(map[string]sarama.IncrementalAlterConfigsEntry{"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSubtract, Value: sp("delete")}}, false)
	wantConfig(t, s.describe(t, sarama.TopicResource, saramaTopic), "cleanup.policy", "compact", sarama.SourceTopic)
}

func (s saramaConfigs) errors(t *testing.T) {
	before := s.describe(t, sarama.TopicResource, saramaTopic)
	set := func(v string) sarama.IncrementalAlterConfigsEntry {
		return sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: sp(v)}
	}
	for _, c := range []struct {
		name string
		call func() error
		want sarama.KError
		// mentions is what the error's message must name (the key).
		mentions string
	}{
		{"AlterConfig of an unknown topic key", func() error {
			return s.admin.AlterConfig(sarama.TopicResource, saramaTopic, map[string]*string{"no.such.config": sp("1")}, false)
		}, sarama.ErrInvalidConfig, "no.such.config"},
		{"validate-only AlterConfig of an unknown topic key", func() error {
			return s.admin.AlterConfig(sarama.TopicResource, saramaTopic, map[string]*string{"no.such.config": sp("1")}, true)
		}, sarama.ErrInvalidConfig, "no.such.config"},
		{"IncrementalAlterConfig of an unknown topic key", func() error {
			return s.admin.IncrementalAlterConfig(sarama.TopicResource, saramaTopic, map[string]sarama.IncrementalAlterConfigsEntry{"no.such.config": set("1")}, false)
		}, sarama.ErrInvalidConfig, "no.such.config"},
		{"IncrementalAlterConfig of an out-of-range value", func() error {
			return s.admin.IncrementalAlterConfig(sarama.TopicResource, saramaTopic, map[string]sarama.IncrementalAlterConfigsEntry{"min.insync.replicas": set("0")}, false)
		}, sarama.ErrInvalidConfig, "min.insync.replicas"},
		{"APPEND to a key that is not a list", func() error {
			return s.admin.IncrementalAlterConfig(sarama.TopicResource, saramaTopic, map[string]sarama.IncrementalAlterConfigsEntry{
				"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationAppend, Value: sp("1")}}, false)
		}, sarama.ErrInvalidConfig, "retention.ms"},
		{"AlterConfig with a null value", func() error {
			return s.admin.AlterConfig(sarama.TopicResource, saramaTopic, map[string]*string{"retention.ms": nil}, false)
		}, sarama.ErrInvalidRequest, "retention.ms"},
		{"DescribeConfig of an unknown topic", func() error {
			_, err := s.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "no-such-topic"})
			return err
		}, sarama.ErrUnknownTopicOrPartition, ""},
		{"AlterConfig of an unknown topic", func() error {
			return s.admin.AlterConfig(sarama.TopicResource, "no-such-topic", map[string]*string{"retention.ms": sp("1")}, false)
		}, sarama.ErrUnknownTopicOrPartition, ""},
		{"IncrementalAlterConfig of an unknown topic", func() error {
			return s.admin.IncrementalAlterConfig(sarama.TopicResource, "no-such-topic", map[string]sarama.IncrementalAlterConfigsEntry{"retention.ms": set("1")}, false)
		}, sarama.ErrUnknownTopicOrPartition, ""},
		{"AlterConfig of a read-only broker key", func() error {
			return s.admin.AlterConfig(sarama.BrokerResource, "1", map[string]*string{"log.retention.hours": sp("1")}, false)
		}, sarama.ErrInvalidRequest, "log.retention.hours"},
		{"IncrementalAlterConfig of a read-only broker key at the cluster default", func() error {
			return s.admin.IncrementalAlterConfig(sarama.BrokerResource, "", map[string]sarama.IncrementalAlterConfigsEntry{"log.dirs": set("/tmp")}, false)
		}, sarama.ErrInvalidRequest, "log.dirs"},
		{"per-broker key at the cluster default", func() error {
			return s.admin.IncrementalAlterConfig(sarama.BrokerResource, "", map[string]sarama.IncrementalAlterConfigsEntry{"listeners": set("PLAINTEXT://127.0.0.1:1")}, false)
		}, sarama.ErrInvalidRequest, "listeners"},
		{"broker value of the wrong type", func() error {
			return s.admin.AlterConfig(sarama.BrokerResource, "", map[string]*string{"log.retention.ms": sp("a day")}, false)
		}, sarama.ErrInvalidConfig, "log.retention.ms"},
		// kbroker refuses broker keys it does not know (README); Kafka
		// would store them for plugins.
		{"unknown broker key", func() error {
			return s.admin.AlterConfig(sarama.BrokerResource, "", map[string]*string{"no.such.broker.config": sp("1")}, false)
		}, sarama.ErrInvalidConfig, "no.such.broker.config"},
	} {
		err := c.call()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: message %q does not name %s", c.name, err, c.mentions)
		}
	}
	// Refused changes left no trace.
	after := s.describe(t, sarama.TopicResource, saramaTopic)
	for name, e := range before {
		if a := after[name]; a.Value != e.Value || a.Source != e.Source {
			t.Errorf("after refused changes topic config %s is %q (%v), was %q (%v)", name, a.Value, a.Source, e.Value, e.Source)
		}
	}
	if d := s.describe(t, sarama.BrokerResource, ""); len(d) != 0 {
		t.Errorf("after refused changes the cluster default has %v, want nothing", names(d))
	}
}

// Broker loggers (KIP-412) through sarama: the broker's loggers with their
// levels; IncrementalAlterConfig SET and DELETE change a level at once;
// bad levels, unknown loggers and the legacy AlterConfig are refused.
func (s saramaConfigs) brokerLoggers(t *testing.T) {
	const logger = "kbroker.api"
	// DYNAMIC_BROKER_LOGGER_CONFIG, which sarama has no constant for.
	const loggerSource = sarama.ConfigSource(6)
	got := s.describe(t, sarama.BrokerLoggerResource, "1")
	root, ok := got["root"]
	if !ok || root.Value == "" || got[logger].Value != root.Value {
		t.Fatalf("broker loggers: root %+v, %s %+v; want both described at the root level", root, logger, got[logger])
	}
	wantConfig(t, got, logger, root.Value, loggerSource)
	level := func(v string) sarama.IncrementalAlterConfigsEntry {
		return sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: sp(v)}
	}
	next := "TRACE"
	if root.Value == next {
		next = "ERROR"
	}
	if err := s.admin.IncrementalAlterConfig(sarama.BrokerLoggerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{logger: level(next)}, false); err != nil {
		t.Fatalf("set the level of %s: %v", logger, err)
	}
	wantConfig(t, s.describe(t, sarama.BrokerLoggerResource, "1"), logger, next, loggerSource)
	if err := s.admin.IncrementalAlterConfig(sarama.BrokerLoggerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
		logger: {Operation: sarama.IncrementalAlterConfigsOperationDelete}}, false); err != nil {
		t.Fatalf("reset the level of %s: %v", logger, err)
	}
	wantConfig(t, s.describe(t, sarama.BrokerLoggerResource, "1"), logger, root.Value, loggerSource)

	for _, c := range []struct {
		name string
		err  error
		want sarama.KError
	}{
		{"unknown level", s.admin.IncrementalAlterConfig(sarama.BrokerLoggerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{logger: level("LOUD")}, false), sarama.ErrInvalidConfig},
		{"unknown logger", s.admin.IncrementalAlterConfig(sarama.BrokerLoggerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{"no.such.logger": level("DEBUG")}, false), sarama.ErrInvalidConfig},
		{"DELETE of the root logger", s.admin.IncrementalAlterConfig(sarama.BrokerLoggerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
			"root": {Operation: sarama.IncrementalAlterConfigsOperationDelete}}, false), sarama.ErrInvalidRequest},
		{"legacy AlterConfig", s.admin.AlterConfig(sarama.BrokerLoggerResource, "1", map[string]*string{logger: sp("DEBUG")}, false), sarama.ErrInvalidRequest},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("broker logger %s: %v, want %v", c.name, c.err, c.want)
		}
	}
	wantConfig(t, s.describe(t, sarama.BrokerLoggerResource, "1"), logger, root.Value, loggerSource)
}

// describe is DescribeConfig of one resource, by config name.
func (s saramaConfigs) describe(t *testing.T, typ sarama.ConfigResourceType, name string) map[string]sarama.ConfigEntry {
	t.Helper()
	entries, err := s.admin.DescribeConfig(sarama.ConfigResource{Type: typ, Name: name})
	if err != nil {
		t.Fatalf("DescribeConfig %v %q: %v", typ, name, err)
	}
	return byConfigName(t, entries)
}

// describeWithSynonyms is DescribeConfigs of one resource with synonyms.
func (s saramaConfigs) describeWithSynonyms(t *testing.T, typ sarama.ConfigResourceType, name string) map[string]sarama.ConfigEntry {
	t.Helper()
	results, err := s.admin.DescribeConfigs([]*sarama.ConfigResource{{Type: typ, Name: name}}, sarama.DescribeConfigsOptions{IncludeSynonyms: true})
	if err != nil {
		t.Fatalf("DescribeConfigs %v %q with synonyms: %v", typ, name, err)
	}
	if len(results) != 1 || results[0].Name != name || results[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("DescribeConfigs %v %q with synonyms: %+v", typ, name, results)
	}
	return byConfigName(t, results[0].Configs)
}

func byConfigName(t *testing.T, entries []sarama.ConfigEntry) map[string]sarama.ConfigEntry {
	t.Helper()
	out := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		if _, dup := out[e.Name]; dup {
			t.Errorf("config %s described twice", e.Name)
		}
		out[e.Name] = e
	}
	return out
}

func wantConfig(t *testing.T, got map[string]sarama.ConfigEntry, name, value string, source sarama.ConfigSource) {
	t.Helper()
	e, ok := got[name]
	if !ok {
		t.Errorf("config %s not described (have %d configs)", name, len(got))
		return
	}
	if e.Value != value || e.Source != source {
		t.Errorf("config %s = %q from %v, want %q from %v", name, e.Value, e.Source, value, source)
	}
}

func wantSynonyms(t *testing.T, got map[string]sarama.ConfigEntry, name string, want []sarama.ConfigSynonym) {
	t.Helper()
	var have []sarama.ConfigSynonym
	for _, s := range got[name].Synonyms {
		have = append(have, *s)
	}
	if !slices.Equal(have, want) {
		t.Errorf("synonyms of %s:\n got %s\nwant %s", name, fmtSynonyms(have), fmtSynonyms(want))
	}
}

func fmtSynonyms(ss []sarama.ConfigSynonym) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%s=%q (%v)", s.ConfigName, s.ConfigValue, s.Source))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func names(m map[string]sarama.ConfigEntry) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func sp(s string) *string { return &s }
