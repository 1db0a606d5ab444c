package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Groups is the catalog of Apache Kafka 4.0's group configs (GroupConfig,
// the GROUP config resource, type 32): exactly its key set, types,
// defaults and per-key validators. Each key's broker synonym is the broker
// key that supplies its value when the group does not override it, the
// group key with "group." in front (share.record.lock.duration.ms is
// group.share.record.lock.duration.ms); share.auto.offset.reset has none.
// Kafka 4.1's share.isolation.level and streams.* keys are not in 4.0.
// Documentation strings are kbroker's own.
//
// The keys are read where they are used (a group coordinator asks for a
// group's settings on each heartbeat), so none has an applier.
var Groups = newCatalog([]*Def{
	{Name: "consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Check: atLeast(1),
		Doc:      "Heartbeat interval given to this consumer group's members (KIP-848 protocol), within the broker's group.consumer.min/max.heartbeat.interval.ms.",
		Synonyms: []Synonym{{Name: "group.consumer.heartbeat.interval.ms"}}},
	{Name: "consumer.session.timeout.ms", Type: TypeInt, Default: "45000", Check: atLeast(1),
		Doc:      "How long this consumer group's members (KIP-848 protocol) may go without a heartbeat before they are removed, within the broker's group.consumer.min/max.session.timeout.ms.",
		Synonyms: []Synonym{{Name: "group.consumer.session.timeout.ms"}}},
	{Name: "share.auto.offset.reset", Type: TypeString, Default: "latest", Check: oneOf("latest", "earliest"),
		Doc: "Where a share group starts reading a partition it has no position in: latest or earliest."},
	{Name: "share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", Check: atLeast(1),
		Doc:      "Heartbeat interval given to this share group's members, within the broker's group.share.min/max.heartbeat.interval.ms.",
		Synonyms: []Synonym{{Name: "group.share.heartbeat.interval.ms"}}},
	{Name: "share.record.lock.duration.ms", Type: TypeInt, Default: "30000", Check: atLeast(1000),
		Doc:      "How long a share group's member holds the records it fetched before they are offered again, within the broker's group.share.min/max.record.lock.duration.ms.",
		Synonyms: []Synonym{{Name: "group.share.record.lock.duration.ms"}}},
	{Name: "share.session.timeout.ms", Type: TypeInt, Default: "45000", Check: atLeast(1),
		Doc:      "How long this share group's members may go without a heartbeat before they are removed, within the broker's group.share.min/max.session.timeout.ms.",
		Synonyms: []Synonym{{Name: "group.share.session.timeout.ms"}}},
})

// groupBounds are the broker limits a group config must keep within, in
// the order Kafka's GroupConfig.validateValues checks them.
var groupBounds = []struct{ key, min, max string }{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
}

// CheckGroupConfigs applies Kafka's rules across a group's configs: each
// timing within the broker's limits, and each session timeout longer than
// its heartbeat interval. values holds the group's effective value of
// every key of Groups (its overrides over the broker's values); broker is
// the effective value of a broker key. The messages are Kafka's.
func CheckGroupConfigs(values map[string]string, broker func(key string) string) error {
	num := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	for _, b := range groupBounds {
		v := num(values[b.key])
		if v < num(broker(b.min)) {
			return fmt.Errorf("%s must be greater than or equal to %s", b.key, b.min)
		}
		if v > num(broker(b.max)) {
			return fmt.Errorf("%s must be less than or equal to %s", b.key, b.max)
		}
	}
	for _, kind := range []string{"consumer", "share"} {
		session, heartbeat := kind+".session.timeout.ms", kind+".heartbeat.interval.ms"
		if num(values[session]) <= num(values[heartbeat]) {
			return fmt.Errorf("%s must be greater than %s", session, heartbeat)
		}
	}
	return nil
}
