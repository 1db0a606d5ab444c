package config

import (
	"strings"
	"testing"
)

func value(e Entry) string {
	if e.Value == nil {
		return "<null>"
	}
	return *e.Value
}

func TestResolveTopicPrecedence(t *testing.T) {
	d := Topics.Lookup("retention.ms")
	cases := []struct {
		name    string
		layers  Layers
		want    string
		source  Source
		synonym []string // synonym names in order
	}{
		{"catalog default via log.retention.hours", Layers{}, "604800000", SourceDefault, []string{"log.retention.hours"}},
		{"static hours converted", Layers{Static: Properties{"log.retention.hours": "1"}}, "3600000", SourceStaticBroker,
			[]string{"log.retention.hours", "log.retention.hours"}},
		{"negative hours mean forever", Layers{Static: Properties{"log.retention.hours": "-1"}}, "-1", SourceStaticBroker,
			[]string{"log.retention.hours", "log.retention.hours"}},
		{"negative minutes mean forever", Layers{Static: Properties{"log.retention.minutes": "-30"}}, "-1", SourceStaticBroker,
			[]string{"log.retention.minutes", "log.retention.hours"}},
		{"negative ms means forever", Layers{ClusterDefault: map[string]string{"log.retention.ms": "-5"}}, "-1", SourceDynamicDefaultBroker,
			[]string{"log.retention.ms", "log.retention.hours"}},
		{"static ms beats static hours", Layers{Static: Properties{"log.retention.hours": "1", "log.retention.ms": "5"}}, "5", SourceStaticBroker,
			[]string{"log.retention.ms", "log.retention.hours", "log.retention.hours"}},
		{"cluster default beats static", Layers{ClusterDefault: map[string]string{"log.retention.ms": "7"}, Static: Properties{"log.retention.ms": "5"}},
			"7", SourceDynamicDefaultBroker, []string{"log.retention.ms", "log.retention.ms", "log.retention.hours"}},
		{"per-broker beats cluster default", Layers{Broker: map[string]string{"log.retention.ms": "8"}, ClusterDefault: map[string]string{"log.retention.ms": "7"}},
			"8", SourceDynamicBroker, []string{"log.retention.ms", "log.retention.ms", "log.retention.hours"}},
		{"topic override beats all", Layers{Topic: map[string]string{"retention.ms": "9"}, Broker: map[string]string{"log.retention.ms": "8"}},
			"9", SourceTopic, []string{"retention.ms", "log.retention.ms", "log.retention.hours"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := ResolveTopic(d, c.layers)
			if value(e) != c.want || e.Source != c.source {
				t.Fatalf("got %s (source %d), want %s (source %d)", value(e), e.Source, c.want, c.source)
			}
			var names []string
			for _, s := range e.Synonyms {
				names = append(names, s.Name)
			}
			if len(names) != len(c.synonym) {
				t.Fatalf("synonyms %v, want %v", names, c.synonym)
			}
			for i := range names {
				if names[i] != c.synonym[i] {
					t.Fatalf("synonyms %v, want %v", names, c.synonym)
				}
			}
		})
	}
}

func TestResolveBrokerHidesOtherSpellings(t *testing.T) {
	l := Layers{Static: Properties{"log.retention.ms": "5", "log.retention.hours": "2"}}
	ms := ResolveBroker(Brokers.Lookup("log.retention.ms"), l)
	if value(ms) != "5" || ms.Source != SourceStaticBroker || len(ms.Synonyms) != 3 {
		t.Fatalf("log.retention.ms = %s source %d synonyms %d", value(ms), ms.Source, len(ms.Synonyms))
	}
	hours := ResolveBroker(Brokers.Lookup("log.retention.hours"), l)
	if value(hours) != "2" || len(hours.Synonyms) != 2 || hours.Synonyms[1].Source != SourceDefault {
		t.Fatalf("log.retention.hours = %s synonyms %+v", value(hours), hours.Synonyms)
	}
	unset := ResolveBroker(Brokers.Lookup("log.retention.ms"), Layers{})
	if unset.Value != nil || unset.Source != SourceDefault {
		t.Fatalf("unset log.retention.ms = %s source %d, want null DEFAULT_CONFIG", value(unset), unset.Source)
	}
}

func TestValidateMessagesNameKeyValueAndRule(t *testing.T) {
	err := Topics.Lookup("segment.bytes").Validate("10")
	if err == nil || err.Error() != "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576" {
		t.Fatalf("got %v", err)
	}
	err = Topics.Lookup("retention.ms").Validate("soon")
	if err == nil || err.Error() != "Invalid value soon for configuration retention.ms: Not a number of type LONG" {
		t.Fatalf("got %v", err)
	}
	if err := Topics.Lookup("cleanup.policy").Validate("compact,delete"); err != nil {
		t.Fatal(err)
	}
	if err := Topics.Lookup("cleanup.policy").Validate("compact,shred"); err == nil {
		t.Fatal("cleanup.policy=shred accepted")
	}
}

// The throttled replica lists take what Kafka's
// ThrottledReplicaListValidator takes: *, or partition:broker pairs.
func TestThrottledReplicaListsAreCheckedAsKafka(t *testing.T) {
	for _, name := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		d := Topics.Lookup(name)
		for _, ok := range []string{"", "*", " * ", "0:1", "0:1, 1:2,12:103"} {
			if err := d.Validate(ok); err != nil {
				t.Errorf("%s=%q refused: %v", name, ok, err)
			}
		}
		for _, bad := range []string{"1", "0:x", "*,0:1", "0:1;1:2", "a:1"} {
			if err := d.Validate(bad); err == nil || !strings.Contains(err.Error(), "must be the literal '*' or a list of replicas") {
				t.Errorf("%s=%q: %v", name, bad, err)
			}
		}
	}
}

func TestNewBrokerParsesKafkaProperties(t *testing.T) {
	props, err := ParseProperties([]byte("# a comment\nnode.id=3\nlisteners=PLAINTEXT://127.0.0.1:9093,INTERNAL://:9094\n" +
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\nlog.dirs=/a,/b\nmy.plugin.key=${not.expanded}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 3 || len(b.Listeners) != 2 || b.Listeners[1].Name != "INTERNAL" || len(b.LogDirs) != 2 {
		t.Fatalf("parsed %+v", b)
	}
	if len(b.Unknown) != 1 || b.Unknown[0] != "my.plugin.key" || props["my.plugin.key"] != "${not.expanded}" {
		t.Fatalf("unknown keys %v, value %q", b.Unknown, props["my.plugin.key"])
	}
	if _, err := NewBroker(Properties{"num.partitions": "many"}); err == nil || err.Error() != "Invalid value many for configuration num.partitions: Not a number of type INT" {
		t.Fatalf("bad value error = %v", err)
	}
	if _, err := NewBroker(Properties{"listeners": "SASL_FOO://:1"}); err == nil {
		t.Fatal("listener without a protocol accepted")
	}
}

// TestEveryDynamicKeyNamesItsApplier: a key that may change at runtime must
// say what puts the change into effect; internal/dynconfig's registry
// checks that each name it meets has an applier registered.
func TestEveryDynamicKeyNamesItsApplier(t *testing.T) {
	check := func(d *Def, dynamic bool) {
		if dynamic && d.AppliedBy == "" {
			t.Errorf("%s may change at runtime but names no applier", d.Name)
		}
		if !dynamic && d.AppliedBy != "" {
			t.Errorf("%s is read only but names the applier %s", d.Name, d.AppliedBy)
		}
	}
	for _, d := range Topics.Defs() {
		check(d, true)
	}
	for _, d := range Brokers.Defs() {
		check(d, d.Mode != ReadOnly)
		if l := ListenerDef("listener.name.internal." + d.Name); l != nil {
			check(l, l.Mode != ReadOnly)
		}
	}
}
