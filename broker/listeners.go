package broker

// Dynamic listener configs, applied as Kafka's DynamicBrokerConfig applies
// its listener reconfigurables, through two appliers of the dynamic
// configuration (internal/dynconfig):
//
//   - Listener security: a listener's TLS key and trust stores and SASL
//     settings (the JAAS lines and so the PLAIN users,
//     sasl.enabled.mechanisms) are rebuilt when a key it reads changes,
//     listener.name.<listener>.<key> before <key>, and when an alter of
//     this broker's configs names one even with an unchanged value (a key
//     store file rewritten in place), and swapped in for the connections
//     accepted from then on; open connections keep theirs. A change that
//     would leave a listener unbuildable (a key that does not match its
//     certificate, an unreadable key store, a bad JAAS line) is refused
//     with INVALID_CONFIG before it is stored, so nothing changes.
//   - Connection limits: max.connection.creation.rate and its
//     listener-scoped form (KIP-612) hold accepts on the listener while
//     over the rate; max.connections and its listener-scoped form hold
//     them while over the count, and max.connections.per.ip with its
//     overrides refuse.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

// listenerSpecs builds every listener from the effective configs. Dynamic
// configs stored earlier that no longer build (a key store file gone) are
// logged and left out, as Kafka ignores invalid dynamic configs at startup.
func (b *Broker) listenerSpecs() ([]wire.ListenerSpec, error) {
	props := b.configs.BrokerProps(b.store.Snapshot())
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
// other — only when there are other listeners to hold back instead. It is
// the one the inter-broker clients use (interBrokerListener: named by
// inter.broker.listener.name or by security.inter.broker.protocol);
// settings that name none are refused at startup (newInterBroker).
func (b *Broker) protectedListener(props config.Properties) string {
	if len(b.cfg.Listeners) <= 1 {
		return ""
	}
	name, err := interBrokerListener(props, b.cfg.Listeners)
	if err != nil {
		return ""
	}
	return name
}

// dynamicListeners applies dynamic listener configs to the running server.
type dynamicListeners struct {
	b      *Broker
	rates  *quota.AcceptRates
	server *wire.Server

	// mu serializes rebuilds, and each reads the newest configs once it
	// holds mu: a rebuild for keys set again (on the writer's goroutine)
	// never swaps in settings older than a store event's.
	mu sync.Mutex
}

// register makes d the listener security and connection limits appliers,
// and applies the current configs. Registered once the server listens; a
// change stored before is in the snapshot read here.
func (d *dynamicListeners) register() {
	d.b.configs.Register(config.ApplyListenerSecurity, dynconfig.Applier{Apply: d.applySecurity, Check: d.checkSecurity, RereadOnSet: true})
	d.b.configs.Register(config.ApplyConnectionLimits, dynconfig.Applier{Apply: d.applyLimits})
	d.applyLimits(dynconfig.Change{Full: true})
	d.applySecurity(dynconfig.Change{Full: true})
}

// applyLimits sets the connection limits and creation rates.
func (d *dynamicListeners) applyLimits(dynconfig.Change) {
	d.mu.Lock()
	defer d.mu.Unlock()
	props := d.b.configs.BrokerProps(d.b.store.Snapshot())
	d.rates.Set(d.b.acceptLimits(props))
	d.server.SetLimits(d.b.connectionLimits(props))
}

// applySecurity rebuilds the TLS and SASL settings of the listeners that
// read a key the change touched, and swaps them in.
func (d *dynamicListeners) applySecurity(ch dynconfig.Change) {
	d.mu.Lock()
	defer d.mu.Unlock()
	props := d.b.configs.BrokerProps(d.b.store.Snapshot())
	for _, l := range d.b.cfg.Listeners {
		if l.SecurityProtocol == "PLAINTEXT" || !(ch.Full || readsAny(l.Name, ch.Keys)) {
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

// checkSecurity is the validation of a change to this broker's dynamic
// configs: every listener whose security the change touches must build
// from the configs it would leave.
func (d *dynamicListeners) checkSecurity(p dynconfig.Proposal) error {
	for _, l := range d.b.cfg.Listeners {
		if l.SecurityProtocol == "PLAINTEXT" || !readsAny(l.Name, p.Keys) {
			continue
		}
		if _, err := d.b.listenerSecurity(p.Next, l); err != nil {
			return fmt.Errorf("Validation of dynamic config update of listener %s failed: %v", l.Name, err)
		}
	}
	return nil
}

// readsAny reports whether listener's TLS or SASL settings read one of keys.
func readsAny(listener string, keys []string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return securityKeyOf(listener, k) })
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
