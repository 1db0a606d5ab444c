package broker

// Dynamic listener configs, applied as Kafka's DynamicBrokerConfig applies
// its listener reconfigurables:
//
//   - The effective configs are server.properties overlaid with the
//     cluster-wide dynamic default, then this broker's dynamic configs
//     (dynamic PASSWORD values decrypted); a listener reads
//     listener.name.<listener>.<key> before <key> from them.
//   - TLS key and trust stores and SASL settings (the JAAS lines and so the
//     PLAIN users, sasl.enabled.mechanisms) are rebuilt on every change to
//     the dynamic broker configs, and on every alter of this broker's that
//     names them even with unchanged values (a key store file rewritten in
//     place), and swapped in for the connections accepted from then on;
//     open connections keep theirs. A change that would leave
//     a listener unbuildable (a key that does not match its certificate, an
//     unreadable key store, a bad JAAS line) is refused with INVALID_CONFIG
//     before it is stored, so nothing changes.
//   - max.connection.creation.rate and its listener-scoped form (KIP-612)
//     hold accepts on the listener while over the rate; max.connections
//     and its listener-scoped form hold them while over the count, and
//     max.connections.per.ip with its overrides refuse.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

// listenerSpecs builds every listener from the effective configs. Dynamic
// configs stored earlier that no longer build (a key store file gone) are
// logged and left out, as Kafka ignores invalid dynamic configs at startup.
func (b *Broker) listenerSpecs(passwords *auth.PasswordEncoder) ([]wire.ListenerSpec, error) {
	props := b.effectiveProps(b.store.Snapshot(), passwords, nil, nil)
	var specs []wire.ListenerSpec
	for _, l := range b.cfg.Listeners {
		sec, err := b.listenerSecurity(props, l)
		if err != nil && !maps.Equal(props, b.cfg.Props) {
			b.log.Error("dynamic listener configs do not apply; using server.properties", "listener", l.Name, "err", err)
			sec, err = b.listenerSecurity(b.cfg.Props, l)
		}
		if err != nil {
			return nil, err
		}
		specs = append(specs, wire.ListenerSpec{Name: l.Name, Protocol: l.SecurityProtocol, Addr: l.Addr(), TLS: sec.TLS, SASL: sec.SASL})
	}
	return specs, nil
}

// effectiveProps overlays server.properties with the cluster-wide dynamic
// default and this broker's dynamic configs — or, when proposed is set,
// with proposed in their place (a change being validated, whose fresh keys
// hold plaintext while the rest is stored encrypted).
func (b *Broker) effectiveProps(snap *meta.Snapshot, passwords *auth.PasswordEncoder, proposed map[string]string, fresh func(string) bool) config.Properties {
	own := snap.BrokerConfig(strconv.Itoa(int(b.cfg.NodeID)))
	if proposed != nil {
		own = proposed
	}
	if fresh == nil {
		fresh = func(string) bool { return false }
	}
	props := maps.Clone(b.cfg.Props)
	if props == nil {
		props = config.Properties{}
	}
	for i, level := range []map[string]string{snap.BrokerConfig(""), own} {
		plain := func(k string) bool { return i == 1 && proposed != nil && fresh(k) }
		for k, v := range level {
			if d := config.Brokers.Lookup(k); d != nil && d.Sensitive() && !plain(k) {
				var err error
				if v, err = decodePassword(passwords, v); err != nil {
					b.log.Warn("dynamic password config cannot be decoded; ignored", "key", k, "err", err)
					continue
				}
			}
			props[k] = v
		}
	}
	return props
}

func decodePassword(passwords *auth.PasswordEncoder, v string) (string, error) {
	if passwords == nil {
		return "", errors.New("password.encoder.secret is not set")
	}
	return passwords.Decode(v)
}

// acceptLimits reads the connection creation rates (KIP-612): the
// broker-wide one, and each listener's, which is its listener-scoped key or
// else the broker-wide value.
func (b *Broker) acceptLimits(props config.Properties) quota.AcceptLimits {
	const key = "max.connection.creation.rate"
	num := func(v string) float64 { n, _ := strconv.ParseFloat(v, 64); return n }
	l := quota.AcceptLimits{Broker: num(config.BrokerValue(key, config.Layers{Static: props})), Listeners: map[string]float64{}}
	for _, ln := range b.cfg.Listeners {
		v, _ := config.ListenerValue(props, ln.Name, key)
		l.Listeners[ln.Name] = num(v)
	}
	l.Exempt = b.protectedListener(props)
	return l
}

// connectionLimits reads the connection count limits: max.connections,
// each listener's, which is its listener-scoped key or else the broker-wide
// value (Kafka reads it with the listener prefix overriding), and the
// per-IP ones.
func (b *Broker) connectionLimits(props config.Properties) wire.Limits {
	atoi := func(v string) int { n, _ := strconv.Atoi(v); return n }
	value := func(key string) string { return config.BrokerValue(key, config.Layers{Static: props}) }
	overrides, _ := config.ParseIPOverrides(value("max.connections.per.ip.overrides"))
	l := wire.Limits{
		MaxConnections: atoi(value("max.connections")), MaxPerListener: map[string]int{},
		InterBroker: b.protectedListener(props),
		MaxPerIP:    atoi(value("max.connections.per.ip")), PerIPOverrides: overrides,
	}
	for _, ln := range b.cfg.Listeners {
		v, _ := config.ListenerValue(props, ln.Name, "max.connections")
		l.MaxPerListener[ln.Name] = atoi(v)
	}
	return l
}

// protectedListener is the inter-broker listener, which Kafka exempts from
// the broker-wide connection limits so that brokers can always reach each
// other — only when there are other listeners to hold back instead.
func (b *Broker) protectedListener(props config.Properties) string {
	if len(b.cfg.Listeners) <= 1 {
		return ""
	}
	if v := strings.TrimSpace(props["inter.broker.listener.name"]); v != "" {
		return strings.ToUpper(v)
	}
	return "PLAINTEXT"
}

// dynamicListeners applies dynamic listener configs to the running server.
type dynamicListeners struct {
	b         *Broker
	passwords *auth.PasswordEncoder
	rates     *quota.AcceptRates
	server    *wire.Server

	// mu serializes rebuilds: a reload reads the newest configs once it
	// holds mu, and a store event for configs newer still is applied after
	// it, so stale settings never stay swapped in.
	mu sync.Mutex
}

// watch applies the current configs now and after every change to the
// dynamic broker configs. The store runs its listeners before a writer's
// Update returns, so an AlterConfigs answered without error is in effect.
func (d *dynamicListeners) watch() {
	d.b.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.BrokerConfigsChanged() {
			d.apply(ev.Cur)
		}
	})
	d.apply(d.b.store.Snapshot())
}

func (d *dynamicListeners) apply(snap *meta.Snapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	props := d.b.effectiveProps(snap, d.passwords, nil, nil)
	d.rates.Set(d.b.acceptLimits(props))
	d.server.SetLimits(d.b.connectionLimits(props))
	d.applySecurity(props, func(string) bool { return true })
}

// reload rebuilds the security of the listeners that read any of keys, a
// stored alter of this broker's configs: as Kafka does, a key store
// altered to the path it already has is read again, the file may have
// changed, though the stored value has not and no change event comes.
func (d *dynamicListeners) reload(keys []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	props := d.b.effectiveProps(d.b.store.Snapshot(), d.passwords, nil, nil)
	d.applySecurity(props, func(listener string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return securityKeyOf(listener, k) })
	})
}

// applySecurity rebuilds the TLS and SASL settings of the listeners that
// rebuild says from props and swaps them in. The caller holds d.mu.
func (d *dynamicListeners) applySecurity(props config.Properties, rebuild func(listener string) bool) {
	for _, l := range d.b.cfg.Listeners {
		if l.SecurityProtocol == "PLAINTEXT" || !rebuild(l.Name) {
			continue
		}
		sec, err := d.b.listenerSecurity(props, l)
		if err == nil {
			err = d.server.SetListenerSecurity(l.Name, sec)
		}
		if err != nil {
			// Validated before it was stored; a key store file may have
			// gone since. The listener keeps what it had.
			d.b.log.Error("listener security not updated", "listener", l.Name, "err", err)
		}
	}
}

// check is the validation of a change to this broker's dynamic configs:
// every listener whose security the change touches must build from the
// configs it would leave. fresh says which keys of next the change sets.
func (d *dynamicListeners) check(next map[string]string, fresh func(string) bool) error {
	snap := d.b.store.Snapshot()
	cur := d.b.effectiveProps(snap, d.passwords, nil, nil)
	props := d.b.effectiveProps(snap, d.passwords, next, fresh)
	for _, l := range d.b.cfg.Listeners {
		if l.SecurityProtocol == "PLAINTEXT" || !touchesSecurity(l.Name, cur, props, fresh) {
			continue
		}
		if _, err := d.b.listenerSecurity(props, l); err != nil {
			return fmt.Errorf("Validation of dynamic config update of listener %s failed: %v", l.Name, err)
		}
	}
	return nil
}

// touchesSecurity reports whether a listener's TLS or SASL settings differ
// between cur and next, or are set again (a key store location set to its
// own path is checked too: its file may have changed).
func touchesSecurity(listener string, cur, next config.Properties, fresh func(string) bool) bool {
	for _, k := range unionKeys(cur, next) {
		if securityKeyOf(listener, k) && (cur[k] != next[k] || fresh(k)) {
			return true
		}
	}
	return false
}

// securityKeyOf reports whether key is a TLS or SASL setting that listener
// reads: ssl.* and sasl.* keys (and <mechanism>.sasl.jaas.config) either
// unscoped or scoped to this listener.
func securityKeyOf(listener, key string) bool {
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		scoped, ok := strings.CutPrefix(rest, strings.ToLower(listener)+".")
		if !ok {
			return false
		}
		key = scoped
	}
	return strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") || strings.HasSuffix(key, ".sasl.jaas.config")
}

func unionKeys(a, b config.Properties) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
