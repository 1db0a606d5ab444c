package config

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// kbrokerOwnKeys are the broker keys kbroker defines that Kafka 4.0's
// broker does not (besides the kbroker.* and metadata.etcd.* families).
var kbrokerOwnKeys = map[string]string{
	"metrics.listener":               "kbroker's Prometheus endpoint",
	"client.quota.subquota.mode":     "kbroker's choice between Kafka's and KIP-55's (user, client-id) quota semantics",
	"quota.user.producer.default":    "kbroker's static per-user quota default",
	"quota.user.consumer.default":    "kbroker's static per-user quota default",
	"quota.producer.default":         "Kafka 3.x static client-id quota default, removed from Kafka 4.0 and kept here",
	"quota.consumer.default":         "Kafka 3.x static client-id quota default, removed from Kafka 4.0 and kept here",
	"super.users":                    "read by Kafka's StandardAuthorizer, not part of KafkaConfig",
	"allow.everyone.if.no.acl.found": "read by Kafka's StandardAuthorizer, not part of KafkaConfig",
	"password.encoder.secret":        "Kafka 3.x (ZooKeeper mode) key; kbroker encrypts dynamic passwords with it",
	"password.encoder.old.secret":    "Kafka 3.x (ZooKeeper mode) key; kbroker encrypts dynamic passwords with it",
}

// scopeDeviations are the keys whose dynamic scope deliberately differs
// from Kafka's.
var scopeDeviations = map[string]string{
	"listeners":                      "kbroker binds its listeners once, at startup",
	"listener.security.protocol.map": "kbroker binds its listeners once, at startup",
}

func kafkaBrokerKeys(t *testing.T) map[string]Mode {
	t.Helper()
	f, err := os.Open("testdata/kafka-4.0-broker-configs.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	modes := map[string]Mode{"read-only": ReadOnly, "per-broker": PerBroker, "cluster-wide": ClusterWide}
	keys := map[string]Mode{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, mode, ok := strings.Cut(line, " ")
		m, known := modes[mode]
		if !ok || !known {
			t.Fatalf("testdata line %q: want <name> <read-only|per-broker|cluster-wide>", line)
		}
		keys[name] = m
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) < 250 {
		t.Fatalf("read %d Kafka keys; the testdata file looks truncated", len(keys))
	}
	return keys
}

// TestBrokerCatalogMatchesKafka40: every Kafka 4.0 broker config is in the
// catalog with Kafka's dynamic update mode, and the catalog has nothing
// else but kbroker's own keys.
func TestBrokerCatalogMatchesKafka40(t *testing.T) {
	kafka := kafkaBrokerKeys(t)
	modeName := map[Mode]string{ReadOnly: "read-only", PerBroker: "per-broker", ClusterWide: "cluster-wide"}
	for name, want := range kafka {
		d := Brokers.byName[name]
		if d == nil {
			t.Errorf("Kafka 4.0 broker config %s is missing from the catalog", name)
			continue
		}
		if d.Mode != want && scopeDeviations[name] == "" {
			t.Errorf("%s: mode %s, Kafka 4.0 has %s", name, modeName[d.Mode], modeName[want])
		}
		if d.Mode == want && scopeDeviations[name] != "" {
			t.Errorf("%s is listed as a scope deviation but matches Kafka (%s)", name, modeName[want])
		}
	}
	for _, d := range Brokers.Defs() {
		if _, ok := kafka[d.Name]; ok {
			continue
		}
		if strings.HasPrefix(d.Name, "kbroker.") || strings.HasPrefix(d.Name, "metadata.etcd.") || kbrokerOwnKeys[d.Name] != "" {
			continue
		}
		t.Errorf("catalog key %s is not a Kafka 4.0 broker config nor listed as kbroker's own", d.Name)
	}
	for name := range kbrokerOwnKeys {
		if Brokers.byName[name] == nil {
			t.Errorf("kbrokerOwnKeys lists %s, which the catalog does not define", name)
		}
	}
}

// TestEveryBrokerConfigIsDocumented: DescribeConfigs v3+ returns each key's
// documentation, and the keys kbroker does not need say so.
func TestEveryBrokerConfigIsDocumented(t *testing.T) {
	for _, d := range Brokers.Defs() {
		if strings.TrimSpace(d.Doc) == "" {
			t.Errorf("%s has no documentation", d.Name)
		}
		if d.AppliedBy == ApplyNotNeeded && !strings.Contains(d.Doc, "kbroker does not need it") {
			t.Errorf("%s is applied by nothing but its documentation does not say kbroker does not need it", d.Name)
		}
		if !d.NoDefault {
			if err := d.Validate(d.Default); err != nil {
				t.Errorf("%s: its default fails its own validator: %v", d.Name, err)
			}
		}
	}
}

// TestClosestBrokerKeyNamesTheLikelyTypo: a misspelt key in
// server.properties is reported with the key it most likely meant.
func TestClosestBrokerKeyNamesTheLikelyTypo(t *testing.T) {
	for typo, want := range map[string]string{
		"listners":                 "listeners",
		"log.dirz":                 "log.dirs",
		"num.partition":            "num.partitions",
		"log.retention.hour":       "log.retention.hours",
		"auto.create.topic.enable": "auto.create.topics.enable",
		"my.custom.plugin.key":     "",
		"x":                        "",
	} {
		if got := ClosestBrokerKey(typo); got != want {
			t.Errorf("ClosestBrokerKey(%q) = %q, want %q", typo, got, want)
		}
	}
}

// TestSegmentBytesFloorIsKafka4s: KIP-1030 raised segment.bytes and
// log.segment.bytes to at least 1 MiB; internal.segment.bytes, Kafka's
// internal key for tests, still takes small segments and is not listed
// among the topic configs a describe returns.
func TestSegmentBytesFloorIsKafka4s(t *testing.T) {
	for _, d := range []*Def{Topics.Lookup("segment.bytes"), Brokers.Lookup("log.segment.bytes")} {
		if err := d.Validate("4096"); err == nil {
			t.Errorf("%s=4096 accepted; Kafka 4 requires at least 1048576", d.Name)
		}
		if err := d.Validate("1048576"); err != nil {
			t.Errorf("%s=1048576 refused: %v", d.Name, err)
		}
	}
	internal := Topics.Lookup("internal.segment.bytes")
	if internal == nil || internal.Validate("4096") != nil {
		t.Fatalf("internal.segment.bytes=4096 not accepted: %+v", internal)
	}
	for _, d := range Topics.Defs() {
		if d.Name == "internal.segment.bytes" {
			t.Error("internal.segment.bytes is among the topic configs every describe lists")
		}
	}
}

// TestListenerScopedKafkaSecurityKeys: every ssl.* and sasl.* key may be
// given per listener, as Kafka allows, including the ones kbroker does not
// need; a key no listener reads may not.
func TestListenerScopedKafkaSecurityKeys(t *testing.T) {
	for _, name := range []string{
		"listener.name.external.ssl.cipher.suites",
		"listener.name.external.ssl.enabled.protocols",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
		"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
		"listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms",
	} {
		if ListenerDef(name) == nil {
			t.Errorf("%s is not a known listener-scoped key", name)
		}
	}
	if d := ListenerDef("listener.name.external.ssl.cipher.suites"); d != nil && d.Mode != PerBroker {
		t.Errorf("listener-scoped ssl.cipher.suites has mode %d, want per-broker", d.Mode)
	}
	if ListenerDef("listener.name.external.num.io.threads") != nil {
		t.Error("listener.name.external.num.io.threads accepted; Kafka has no per-listener num.io.threads")
	}
}
