package dynconfig

import (
	"slices"
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// Group configs (Kafka 4's GROUP config resource) are read where they act:
// a group coordinator asks GroupSettings on each heartbeat, so a change is
// in effect from the next heartbeat on, with nothing to wake.

// Group is every config of group in snap, sorted by name: its overrides
// over the broker's values (config.ResolveGroup). A group without
// overrides, or one that does not exist, reports the broker's values.
func (c *Configs) Group(snap *meta.Snapshot, group string) []Described {
	overrides := snap.GroupConfig(group)
	layers := c.Layers(snap, "")
	out := make([]Described, 0, len(config.Groups.Defs()))
	for _, d := range config.Groups.Defs() {
		out = append(out, Described{Entry: config.ResolveGroup(d, overrides, layers), Def: d, Sensitive: d.Sensitive()})
	}
	slices.SortFunc(out, ByName)
	return out
}

// checkGroup applies Kafka's cross-key rules to a group's new overrides,
// taking the keys they leave out at the broker's values: the timings
// within the broker's group.consumer.* and group.share.* limits, each
// session timeout longer than its heartbeat interval.
//
// Kafka 4.0 fills the keys a group does not set with GroupConfig's fixed
// defaults instead, so on a broker whose limits exclude those defaults
// (group.consumer.min.session.timeout.ms=50000) it refuses every change of
// another key. kbroker checks the values the group would actually run with.
func (c *Configs) checkGroup(next map[string]string) error {
	snap := c.store.Snapshot()
	layers := c.Layers(snap, "")
	broker := func(key string) string {
		if d := config.Brokers.Lookup(key); d != nil {
			if e := config.ResolveBroker(d, layers); e.Value != nil {
				return *e.Value
			}
		}
		return ""
	}
	if err := config.CheckGroupConfigs(config.GroupValues(next, layers), broker); err != nil {
		return refuse(ErrInvalidConfig, "%s", err.Error())
	}
	return nil
}

// GroupSettings is the session timeout and heartbeat interval a consumer
// group (KIP-848 protocol) runs with now: the group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, each
// the broker's value when the group overrides only the other. ok is false
// when the group overrides neither: the coordinator then uses its own
// broker defaults. It reads the current snapshot without locking or
// allocating, for a coordinator to call on every heartbeat.
func (c *Configs) GroupSettings(groupID string) (sessionTimeout, heartbeatInterval time.Duration, ok bool) {
	snap := c.store.Snapshot()
	overrides := snap.GroupConfig(groupID)
	session, hasSession := overrides["consumer.session.timeout.ms"]
	heartbeat, hasHeartbeat := overrides["consumer.heartbeat.interval.ms"]
	if !hasSession && !hasHeartbeat {
		return 0, 0, false
	}
	if !hasSession {
		session = c.brokerValue(snap, "group.consumer.session.timeout.ms")
	}
	if !hasHeartbeat {
		heartbeat = c.brokerValue(snap, "group.consumer.heartbeat.interval.ms")
	}
	return millis(session), millis(heartbeat), true
}

// brokerValue is this broker's effective value of a broker key in snap.
func (c *Configs) brokerValue(snap *meta.Snapshot, key string) string {
	for _, level := range []map[string]string{snap.BrokerConfig(c.nodeID), snap.BrokerConfig(""), c.static} {
		if v, ok := level[key]; ok {
			return v
		}
	}
	if d := config.Brokers.Lookup(key); d != nil {
		return d.Default
	}
	return ""
}

// millis reads a stored (validated) millisecond count.
func millis(v string) time.Duration {
	n, _ := strconv.ParseInt(v, 10, 64)
	return time.Duration(n) * time.Millisecond
}
