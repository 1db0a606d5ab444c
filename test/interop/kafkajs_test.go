package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kbroker/internal/config"
)

// kafkajsVersion is the kafkajs that node/package-lock.json pins.
const kafkajsVersion = "2.2.4"

// kafkajs's ConfigSource values (src/protocol/configSource.js).
const (
	kjsTopicConfig   = 1
	kjsDynamicBroker = 2
	kjsStaticBroker  = 4
	kjsDefaultConfig = 5
)

// kjsStep is one admin call for node/admin.js.
type kjsStep struct {
	Call string `json:"call"`
	Args any    `json:"args"`
}

// kjsOutcome is what one admin call resolved to, or the error it threw.
type kjsOutcome struct {
	Result json.RawMessage `json:"result"`
	Error  *kjsError       `json:"error"`
}

// kjsError is a kafkajs error as a program using kafkajs sees it.
type kjsError struct {
	Name      string     `json:"name"`
	Type      string     `json:"type"`
	Code      int        `json:"code"`
	Message   string     `json:"message"`
	Retriable bool       `json:"retriable"`
	Errors    []kjsError `json:"errors"`
}

// kjsDescribed is what admin.describeConfigs resolves to.
type kjsDescribed struct {
	Resources []struct {
		ErrorCode     int              `json:"errorCode"`
		ResourceType  int              `json:"resourceType"`
		ResourceName  string           `json:"resourceName"`
		ConfigEntries []kjsConfigEntry `json:"configEntries"`
	} `json:"resources"`
}

type kjsConfigEntry struct {
	ConfigName     string       `json:"configName"`
	ConfigValue    *string      `json:"configValue"`
	ReadOnly       bool         `json:"readOnly"`
	IsDefault      bool         `json:"isDefault"`
	IsSensitive    bool         `json:"isSensitive"`
	ConfigSource   int          `json:"configSource"`
	ConfigSynonyms []kjsSynonym `json:"configSynonyms"`
}

type kjsSynonym struct {
	ConfigName   string  `json:"configName"`
	ConfigValue  *string `json:"configValue"`
	ConfigSource int     `json:"configSource"`
}

// kafkajsScript finds node and the kafkajs that scripts/test installs
// (npm ci in test/interop/node). Locally a missing one skips the test; in
// CI (CI set) it fails it.
func kafkajsScript(t *testing.T) (node, script string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "" {
			t.Skipf(format+"; run npm ci --prefix test/interop/node (scripts/test does), or set CI=1 to make this a failure", args...)
		}
		t.Fatalf(format+" under CI", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found: %v", err)
	}
	pkg, err := os.ReadFile(filepath.Join("node", "node_modules", "kafkajs", "package.json"))
	if err != nil {
		missing("kafkajs not installed: %v", err)
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != kafkajsVersion {
		t.Fatalf("installed kafkajs is %q (%v), package-lock.json pins %s: run npm ci --prefix test/interop/node", meta.Version, err, kafkajsVersion)
	}
	return node, filepath.Join("node", "admin.js")
}

// runKafkajs runs steps through kafkajs's admin client (node script)
// against addr.
func runKafkajs(t *testing.T, node, script, addr string, steps []kjsStep) []kjsOutcome {
	t.Helper()
	in, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	out := runCmd(t, 60*time.Second, string(in), node, script, addr)
	var outcomes []kjsOutcome
	if err := json.Unmarshal([]byte(out), &outcomes); err != nil {
		t.Fatalf("node %s: output is not JSON: %v\n%s", script, err, out)
	}
	if len(outcomes) != len(steps) {
		t.Fatalf("node %s: %d outcomes for %d steps:\n%s", script, len(outcomes), len(steps), out)
	}
	return outcomes
}

type kjsEntry = map[string]string

func kjsTopic(name string, configs ...kjsEntry) map[string]any {
	return map[string]any{"topic": name, "numPartitions": 1, "replicationFactor": 1, "configEntries": orEmpty(configs)}
}

func kjsResource(typ, name string, configs ...kjsEntry) map[string]any {
	return map[string]any{"type": typ, "name": name, "configEntries": orEmpty(configs)}
}

func orEmpty(configs []kjsEntry) []kjsEntry {
	if configs == nil {
		return []kjsEntry{}
	}
	return configs
}

func kjsDescribe(typ, name string) kjsStep {
	return kjsStep{"describeConfigs", map[string]any{
		"resources": []any{map[string]any{"type": typ, "name": name}}, "includeSynonyms": true}}
}

// kafkajs's admin client (describeConfigs with synonyms, alterConfigs,
// createTopics with configEntries) against kbroker: values, sources and
// synonyms as a Node.js program sees them, full-replace alterConfigs,
// validate-only, and errors as kafkajs's typed errors. kafkajs sends topic
// config requests to the controller named in Metadata and broker ones to
// that broker.
func TestKafkajsAdminConfigs(t *testing.T) {
	node, script := kafkajsScript(t)
	addr := startBroker(t, config.Properties{"log.retention.hours": "48"})
	const topic = "kafkajs-configs"
	steps := []kjsStep{
		/* 0 */ {"createTopics", map[string]any{"topics": []any{kjsTopic(topic,
			kjsEntry{"name": "retention.ms", "value": "3600000"}, kjsEntry{"name": "cleanup.policy", "value": "compact"})}}},
		/* 1 */ kjsDescribe("TOPIC", topic),
		/* 2 */ {"describeConfigs", map[string]any{"resources": []any{
			map[string]any{"type": "TOPIC", "name": topic, "configNames": []string{"retention.ms", "segment.bytes"}}}}},
		/* 3 */ {"alterConfigs", map[string]any{"validateOnly": true, "resources": []any{
			kjsResource("TOPIC", topic, kjsEntry{"name": "max.message.bytes", "value": "2048"})}}},
		/* 4 */ kjsDescribe("TOPIC", topic),
		/* 5 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("TOPIC", topic, kjsEntry{"name": "max.message.bytes", "value": "2048"})}}},
		/* 6 */ kjsDescribe("TOPIC", topic),
		/* 7 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("TOPIC", topic, kjsEntry{"name": "max.message.bytes", "value": "4096"}, kjsEntry{"name": "no.such.config", "value": "1"})}}},
		/* 8 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("TOPIC", topic, kjsEntry{"name": "retention.ms", "value": "soon"})}}},
		/* 9 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("TOPIC", "kafkajs-no-such-topic", kjsEntry{"name": "retention.ms", "value": "1"})}}},
		/* 10 */ kjsDescribe("TOPIC", "kafkajs-no-such-topic"),
		/* 11 */ {"createTopics", map[string]any{"topics": []any{kjsTopic("kafkajs-bad-key", kjsEntry{"name": "no.such.config", "value": "1"})}}},
		/* 12 */ {"createTopics", map[string]any{"topics": []any{kjsTopic("kafkajs-bad-value", kjsEntry{"name": "retention.ms", "value": "soon"})}}},
		/* 13 */ kjsDescribe("BROKER", "1"),
		/* 14 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("BROKER", "1", kjsEntry{"name": "log.retention.ms", "value": "7200000"})}}},
		/* 15 */ kjsDescribe("TOPIC", topic),
		/* 16 */ {"alterConfigs", map[string]any{"resources": []any{kjsResource("BROKER", "1")}}},
		/* 17 */ {"alterConfigs", map[string]any{"resources": []any{
			kjsResource("BROKER", "1", kjsEntry{"name": "log.retention.hours", "value": "1"})}}},
		/* 18 */ kjsDescribe("TOPIC", topic),
		/* 19 */ {"listTopics", nil},
	}
	out := runKafkajs(t, node, script, addr, steps)
	ok := func(i int) json.RawMessage {
		t.Helper()
		if out[i].Error != nil {
			t.Fatalf("step %d %s: kafkajs threw %+v", i, steps[i].Call, *out[i].Error)
		}
		return out[i].Result
	}
	described := func(i int) map[string]kjsConfigEntry {
		t.Helper()
		var d kjsDescribed
		if err := json.Unmarshal(ok(i), &d); err != nil {
			t.Fatalf("step %d describeConfigs: %v\n%s", i, err, out[i].Result)
		}
		if len(d.Resources) != 1 || d.Resources[0].ErrorCode != 0 {
			t.Fatalf("step %d describeConfigs: %s", i, out[i].Result)
		}
		m := map[string]kjsConfigEntry{}
		for _, e := range d.Resources[0].ConfigEntries {
			m[e.ConfigName] = e
		}
		return m
	}
	wantErr := func(i int, typ string, code int) {
		t.Helper()
		e := out[i].Error
		if e == nil {
			t.Errorf("step %d %s: resolved to %s, want kafkajs error %s", i, steps[i].Call, out[i].Result, typ)
			return
		}
		if e.Type != typ || e.Code != code || e.Name != "KafkaJSProtocolError" {
			t.Errorf("step %d %s: threw %s type %q code %d (%s), want KafkaJSProtocolError %s (%d)", i, steps[i].Call, e.Name, e.Type, e.Code, e.Message, typ, code)
		}
	}

	if string(ok(0)) != "true" {
		t.Errorf("createTopics with configEntries resolved to %s, want true (created)", out[0].Result)
	}

	t.Run("describe topic with synonyms", func(t *testing.T) {
		got := described(1)
		if len(got) < 30 {
			t.Errorf("describeConfigs returned %d topic configs, want every one (30+)", len(got))
		}
		wantKjs(t, got, "retention.ms", "3600000", kjsTopicConfig)
		wantKjs(t, got, "cleanup.policy", "compact", kjsTopicConfig)
		wantKjs(t, got, "segment.bytes", "1073741824", kjsDefaultConfig)
		if e := got["segment.bytes"]; !e.IsDefault || e.ReadOnly || e.IsSensitive {
			t.Errorf("segment.bytes: isDefault %v readOnly %v isSensitive %v, want a default, writable, not sensitive", e.IsDefault, e.ReadOnly, e.IsSensitive)
		}
		wantKjsSynonyms(t, got, "retention.ms", []kjsSynonym{
			{"retention.ms", sp("3600000"), kjsTopicConfig},
			{"log.retention.hours", sp("48"), kjsStaticBroker},
			{"log.retention.hours", sp("168"), kjsDefaultConfig},
		})
		wantKjsSynonyms(t, got, "cleanup.policy", []kjsSynonym{
			{"cleanup.policy", sp("compact"), kjsTopicConfig},
			{"log.cleanup.policy", sp("delete"), kjsDefaultConfig},
		})
	})
	t.Run("describe named configs", func(t *testing.T) {
		got := described(2)
		var names []string
		for n := range got {
			names = append(names, n)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"retention.ms", "segment.bytes"}) {
			t.Errorf("describeConfigs with configNames [retention.ms segment.bytes] returned %v", names)
		}
	})
	t.Run("alterConfigs replaces all overrides", func(t *testing.T) {
		ok(3)
		got := described(4)
		wantKjs(t, got, "max.message.bytes", "1048588", kjsDefaultConfig)
		wantKjs(t, got, "retention.ms", "3600000", kjsTopicConfig)
		ok(5)
		got = described(6)
		wantKjs(t, got, "max.message.bytes", "2048", kjsTopicConfig)
		wantKjs(t, got, "retention.ms", staticRetentionMs, kjsStaticBroker)
		wantKjs(t, got, "cleanup.policy", "delete", kjsDefaultConfig)
	})
	t.Run("errors", func(t *testing.T) {
		wantErr(7, "INVALID_CONFIG", 40)
		wantErr(8, "INVALID_CONFIG", 40)
		wantErr(9, "UNKNOWN_TOPIC_OR_PARTITION", 3)
		wantErr(10, "UNKNOWN_TOPIC_OR_PARTITION", 3)
		for _, i := range []int{11, 12} {
			e := out[i].Error
			if e == nil || e.Name != "KafkaJSAggregateError" || len(e.Errors) != 1 ||
				e.Errors[0].Name != "KafkaJSCreateTopicError" || e.Errors[0].Type != "INVALID_CONFIG" {
				t.Errorf("step %d createTopics with an invalid config: %+v (result %s), want a KafkaJSCreateTopicError INVALID_CONFIG", i, e, out[i].Result)
			}
		}
		wantErr(17, "INVALID_REQUEST", 42)
		// Refused changes left no trace.
		got := described(18)
		wantKjs(t, got, "max.message.bytes", "2048", kjsTopicConfig)
		wantKjs(t, got, "retention.ms", staticRetentionMs, kjsStaticBroker)
		var topics []string
		if err := json.Unmarshal(ok(19), &topics); err != nil {
			t.Fatalf("listTopics: %v", err)
		}
		for _, name := range topics {
			if strings.HasPrefix(name, "kafkajs-bad") {
				t.Errorf("a topic refused for its configs was created: listTopics gives %v", topics)
			}
		}
	})
	t.Run("broker configs", func(t *testing.T) {
		got := described(13)
		wantKjs(t, got, "log.retention.hours", "48", kjsStaticBroker)
		if e := got["log.retention.hours"]; !e.ReadOnly {
			t.Errorf("broker config log.retention.hours: readOnly false, want true")
		}
		if e := got["max.connections"]; e.ReadOnly {
			t.Errorf("broker config max.connections: readOnly true, want false (cluster-wide dynamic)")
		}
		ok(14)
		wantKjs(t, described(15), "retention.ms", "7200000", kjsDynamicBroker)
		ok(16)
	})
}

func wantKjs(t *testing.T, got map[string]kjsConfigEntry, name, value string, source int) {
	t.Helper()
	e, ok := got[name]
	if !ok {
		t.Errorf("config %s not described", name)
		return
	}
	if e.ConfigValue == nil || *e.ConfigValue != value || e.ConfigSource != source {
		t.Errorf("config %s = %v from source %d, want %q from %d", name, deref(e.ConfigValue), e.ConfigSource, value, source)
	}
}

func wantKjsSynonyms(t *testing.T, got map[string]kjsConfigEntry, name string, want []kjsSynonym) {
	t.Helper()
	have := got[name].ConfigSynonyms
	if !slices.EqualFunc(have, want, func(a, b kjsSynonym) bool {
		return a.ConfigName == b.ConfigName && a.ConfigSource == b.ConfigSource && deref(a.ConfigValue) == deref(b.ConfigValue)
	}) {
		h, _ := json.Marshal(have)
		w, _ := json.Marshal(want)
		t.Errorf("synonyms of %s:\n got %s\nwant %s", name, h, w)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
