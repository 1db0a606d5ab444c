package config

import (
	"slices"
	"testing"
)

// kafka40GroupConfigs is Kafka 4.0's GroupConfig: every key with its type
// and default (GroupConfig.java; 4.1 added share.isolation.level and the
// streams.* keys).
var kafka40GroupConfigs = map[string]struct {
	typ Type
	def string
}{
	"consumer.session.timeout.ms":    {TypeInt, "45000"},
	"consumer.heartbeat.interval.ms": {TypeInt, "5000"},
	"share.session.timeout.ms":       {TypeInt, "45000"},
	"share.heartbeat.interval.ms":    {TypeInt, "5000"},
	"share.record.lock.duration.ms":  {TypeInt, "30000"},
	"share.auto.offset.reset":        {TypeString, "latest"},
}

// TestGroupCatalogMatchesKafka40: the group catalog is Kafka 4.0's key set
// with its types and defaults, documented; each broker synonym is a broker
// key with the same default; each bound names a broker key.
func TestGroupCatalogMatchesKafka40(t *testing.T) {
	if n := len(Groups.Defs()); n != len(kafka40GroupConfigs) {
		t.Errorf("the catalog has %d group configs, Kafka 4.0 %d", n, len(kafka40GroupConfigs))
	}
	for name, want := range kafka40GroupConfigs {
		d := Groups.Lookup(name)
		if d == nil {
			t.Errorf("Kafka 4.0 group config %s is missing", name)
			continue
		}
		if d.Type != want.typ || d.Default != want.def || d.Doc == "" {
			t.Errorf("%s: type %s default %q doc %q; Kafka 4.0 has %s %q", name, d.Type, d.Default, d.Doc, want.typ, want.def)
		}
		if err := d.Validate(d.Default); err != nil {
			t.Errorf("%s: its default fails its own validator: %v", name, err)
		}
		for _, s := range d.Synonyms {
			b := Brokers.Lookup(s.Name)
			if b == nil || s.Name != "group."+name || b.Default != d.Default {
				t.Errorf("%s: broker synonym %s is not group.%s with the same default (%+v)", name, s.Name, name, b)
			}
		}
	}
	for _, b := range groupBounds {
		if Groups.Lookup(b.key) == nil || Brokers.Lookup(b.min) == nil || Brokers.Lookup(b.max) == nil {
			t.Errorf("bound %+v names a key no catalog has", b)
		}
	}
}

// TestCheckGroupConfigsInKafkasOrder: the broker's defaults pass; each
// rule refuses with Kafka's message, the limits before the
// session-above-heartbeat rule.
func TestCheckGroupConfigsInKafkasOrder(t *testing.T) {
	broker := func(key string) string { return Brokers.Lookup(key).Default }
	defaults := GroupValues(nil, Layers{})
	if err := CheckGroupConfigs(defaults, broker); err != nil {
		t.Fatalf("Kafka's defaults refused: %v", err)
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range defaults {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{with("consumer.heartbeat.interval.ms", "16000", "consumer.session.timeout.ms", "1"),
			"consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{with("share.session.timeout.ms", "60001"), "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{with("share.record.lock.duration.ms", "60001"), "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
	} {
		if err := CheckGroupConfigs(tc.values, broker); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	wide := func(key string) string {
		if slices.Contains([]string{"group.share.min.session.timeout.ms", "group.share.min.heartbeat.interval.ms"}, key) {
			return "1000"
		}
		return broker(key)
	}
	err := CheckGroupConfigs(with("share.session.timeout.ms", "5000"), wide)
	if err == nil || err.Error() != "share.session.timeout.ms must be greater than share.heartbeat.interval.ms" {
		t.Errorf("session equal to heartbeat: %v", err)
	}
}
