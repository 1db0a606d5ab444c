package dynconfig

import (
	"fmt"
	"maps"
	"slices"

	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// Applier puts new values of the keys naming it (config.Def.AppliedBy)
// into effect.
type Applier struct {
	// Apply is called after every stored change that touches one of the
	// applier's keys, on the store's goroutine before the writer's call
	// returns (so an AlterConfigs answered without error is in effect),
	// and on the writer's goroutine for keys set again (RereadOnSet). It
	// must not block for long, and must be safe for both at once.
	Apply func(Change)
	// Check vets a proposed change to this broker's configs that names
	// one of the applier's keys, before it is stored: an error refuses
	// the change with INVALID_CONFIG and nothing changes. Nil: no check.
	// It may be slow (it reads files): it runs outside any store
	// transaction.
	Check func(Proposal) error
	// RereadOnSet: a key of this broker set to the value it already has
	// is applied again, because the value names a file that may have
	// changed (a key store rewritten in place; Kafka does the same,
	// KAFKA-14136). The store sees no change then and tells no one.
	RereadOnSet bool
}

// Change is what an applier is woken for.
type Change struct {
	Snap *meta.Snapshot
	// Full: the whole metadata was reloaded; anything may have changed.
	Full bool
	// Keys are the applier's broker keys whose value changed for this
	// broker (its own configs or the cluster-wide default), or were set
	// again (RereadOnSet).
	Keys []string
	// Topics are the topics whose overrides of the applier's keys
	// changed.
	Topics []string
}

// Proposal is a change to this broker's configs being validated.
type Proposal struct {
	// Cur and Next are this broker's effective settings before and after
	// (BrokerProps; Next holds the change's new values in plaintext).
	Cur, Next config.Properties
	// Keys are the keys the change names (set again included) or whose
	// stored value it changes.
	Keys []string
}

// Register makes a the applier of every key naming name. Each name has one
// applier; registering a second is a programming error.
func (c *Configs) Register(name config.Applier, a Applier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.appliers[name]; dup {
		panic("dynconfig: two appliers registered for " + string(name))
	}
	c.appliers[name] = a
}

// Unapplied lists the dynamic keys of the catalogs whose applier is not
// registered: a key accepted at runtime that nothing puts into effect.
func (c *Configs) Unapplied() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	check := func(d *config.Def) {
		if _, ok := c.appliers[d.AppliedBy]; !ok {
			out = append(out, fmt.Sprintf("%s (applier %q)", d.Name, d.AppliedBy))
		}
	}
	for _, d := range config.Topics.Defs() {
		check(d)
	}
	for _, d := range config.Brokers.Defs() {
		if d.Mode != config.ReadOnly {
			check(d)
		}
	}
	return out
}

// registered returns a copy of the registry.
func (c *Configs) registered() map[config.Applier]Applier {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.appliers)
}

// changed wakes the appliers of the keys a store event touched.
func (c *Configs) changed(ev meta.Event) {
	if ev.Full {
		for _, a := range c.registered() {
			a.Apply(Change{Snap: ev.Cur, Full: true})
		}
		return
	}
	woken := map[config.Applier]*Change{}
	wake := func(d *config.Def) *Change {
		ch := woken[d.AppliedBy]
		if ch == nil {
			ch = &Change{Snap: ev.Cur}
			woken[d.AppliedBy] = ch
		}
		return ch
	}
	if ev.BrokerConfigsChanged() {
		for _, id := range []string{c.nodeID, ""} {
			for _, k := range ChangedKeys(ev.Old.BrokerConfig(id), ev.Cur.BrokerConfig(id)) {
				if d := config.Brokers.Lookup(k); d != nil && d.AppliedBy != "" {
					ch := wake(d)
					if !slices.Contains(ch.Keys, k) {
						ch.Keys = append(ch.Keys, k)
					}
				}
			}
		}
	}
	for _, topic := range ev.ChangedTopicConfigs() {
		for _, k := range ChangedKeys(ev.Old.TopicConfig(topic), ev.Cur.TopicConfig(topic)) {
			if d := config.Topics.Lookup(k); d != nil {
				// Each topic comes once, its keys together: checking the
				// last one keeps a change of many topics linear.
				if ch := wake(d); len(ch.Topics) == 0 || ch.Topics[len(ch.Topics)-1] != topic {
					ch.Topics = append(ch.Topics, topic)
				}
			}
		}
	}
	c.wake(woken)
}

// setAgain wakes the RereadOnSet appliers of keys that a stored change of
// this broker's configs set to the values they had.
func (c *Configs) setAgain(keys []string) {
	appliers := c.registered()
	woken := map[config.Applier]*Change{}
	for _, k := range keys {
		d := config.Brokers.Lookup(k)
		if d == nil || !appliers[d.AppliedBy].RereadOnSet {
			continue
		}
		if woken[d.AppliedBy] == nil {
			woken[d.AppliedBy] = &Change{Snap: c.store.Snapshot()}
		}
		woken[d.AppliedBy].Keys = append(woken[d.AppliedBy].Keys, k)
	}
	c.wake(woken)
}

func (c *Configs) wake(woken map[config.Applier]*Change) {
	if len(woken) == 0 {
		return
	}
	appliers := c.registered()
	for _, name := range slices.Sorted(maps.Keys(woken)) {
		if a, ok := appliers[name]; ok {
			a.Apply(*woken[name])
		}
	}
}

// check runs the Check of every applier woken by a proposed change of this
// broker's stored configs from cur to next; named are the keys the request
// names, whose values in next are plaintext.
func (c *Configs) check(named []string, cur, next map[string]string) error {
	keys := slices.Clone(named)
	for _, k := range ChangedKeys(cur, next) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	appliers := c.registered()
	var names []config.Applier
	for _, k := range keys {
		if d := config.Brokers.Lookup(k); d != nil && appliers[d.AppliedBy].Check != nil && !slices.Contains(names, d.AppliedBy) {
			names = append(names, d.AppliedBy)
		}
	}
	if len(names) == 0 {
		return nil
	}
	snap := c.store.Snapshot()
	plaintext := map[string]bool{}
	for _, k := range named {
		plaintext[k] = true
	}
	p := Proposal{Cur: c.overlay(snap, cur, nil), Next: c.overlay(snap, next, plaintext), Keys: keys}
	for _, name := range names {
		if err := appliers[name].Check(p); err != nil {
			return err
		}
	}
	return nil
}

// ChangedKeys lists the keys whose value differs between a and b (set in
// one only, or to different values), sorted.
func ChangedKeys[V comparable](a, b map[string]V) []string {
	var out []string
	for _, k := range unionKeys(a, b) {
		va, okA := a[k]
		vb, okB := b[k]
		if okA != okB || va != vb {
			out = append(out, k)
		}
	}
	return out
}

// unionKeys lists the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return slices.Sorted(maps.Keys(keys))
}
