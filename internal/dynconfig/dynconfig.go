// Package dynconfig owns kbroker's dynamic configuration: the effective
// configuration of each metadata snapshot (the layers a value comes from,
// and this broker's settings with dynamic passwords decrypted), the
// validation of a change, the embedder's alter-config policy (KIP-133),
// the encryption of dynamic passwords, the audit line of every applied
// change, and the registry of appliers that put a change into effect.
//
// Every dynamic key of the config catalog names its applier
// (config.Def.AppliedBy); the package that owns what the key changes
// registers the applier here (Register), and a change wakes only the
// appliers of the keys it touched: a certificate rotation rebuilds listener
// security and leaves the partition logs alone.
//
// A package that adds dynamic keys (a group coordinator's group.* limits,
// say) adds an applier name to the catalog (config.ApplyGroups), sets
// AppliedBy on each of its keys, and registers the applier once at startup:
//
//	configs.Register(config.ApplyGroups, dynconfig.Applier{
//		Apply: func(ch dynconfig.Change) { g.setLimits(configs.Layers(ch.Snap, "")) },
//		Check: nil, // or a func(dynconfig.Proposal) error run before the change is stored
//	})
//
// A running broker with a dynamic key whose applier is not registered
// fails its test (Unapplied).
package dynconfig

import (
	"errors"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/logging"
	"kbroker/internal/meta"
	"kbroker/policy"
)

// Options are what Configs is built from.
type Options struct {
	Broker *config.Broker // static configuration (server.properties)
	Store  *meta.Store
	// Policy vetoes changes (alter.config.policy.class.name); nil allows
	// every change.
	Policy policy.AlterConfig
	// Passwords encrypts dynamic PASSWORD configs at rest
	// (password.encoder.secret); nil refuses to store them.
	Passwords *auth.PasswordEncoder
	Logger    *slog.Logger
	// Audit receives one line per key an applied change altered.
	Audit *slog.Logger
	// Loggers are the broker's named loggers (the BROKER_LOGGER
	// resource).
	Loggers *logging.Loggers
}

// Configs is the broker's dynamic configuration.
type Configs struct {
	nodeID    string
	static    config.Properties
	store     *meta.Store
	policy    policy.AlterConfig
	passwords *auth.PasswordEncoder
	log       *slog.Logger
	audit     *slog.Logger
	loggers   *logging.Loggers

	mu       sync.Mutex // guards appliers
	appliers map[config.Applier]Applier

	topicBase atomic.Pointer[topicBase] // describe.go
}

// New returns the dynamic configuration of o.Broker and starts waking the
// registered appliers on every change of the stored configs.
func New(o Options) *Configs {
	c := &Configs{
		nodeID: strconv.Itoa(int(o.Broker.NodeID)), static: o.Broker.Props, store: o.Store,
		policy: o.Policy, passwords: o.Passwords, log: o.Logger, audit: o.Audit, loggers: o.Loggers,
		appliers: map[config.Applier]Applier{},
	}
	// The Kafka keys kbroker accepts without needing them (num.io.threads,
	// log.cleaner.threads, ...) change nothing when set: registering their
	// applier here, as an explicit no-op, keeps Unapplied meaningful.
	c.appliers[config.ApplyNotNeeded] = Applier{Apply: func(Change) {}}
	o.Store.OnChange(c.changed)
	return c
}

// Layers are where a topic's config values come from in snap (topic ""
// has no overrides: the broker-level values every topic inherits).
func (c *Configs) Layers(snap *meta.Snapshot, topic string) config.Layers {
	return config.Layers{
		Topic:          snap.TopicConfig(topic),
		Broker:         snap.BrokerConfig(c.nodeID),
		ClusterDefault: snap.BrokerConfig(""),
		Static:         c.static,
	}
}

// BrokerProps are this broker's effective settings in snap, as its
// listeners read them: server.properties overlaid with the cluster-wide
// dynamic default, then this broker's dynamic configs, dynamic PASSWORD
// values decrypted. A value that cannot be decrypted is logged and left
// out.
func (c *Configs) BrokerProps(snap *meta.Snapshot) config.Properties {
	return c.overlay(snap, snap.BrokerConfig(c.nodeID), nil)
}

// overlay is BrokerProps with own in place of this broker's stored
// configs; the keys in plaintext hold values not yet encrypted (a change
// being validated).
func (c *Configs) overlay(snap *meta.Snapshot, own map[string]string, plaintext map[string]bool) config.Properties {
	props := maps.Clone(c.static)
	if props == nil {
		props = config.Properties{}
	}
	for i, level := range []map[string]string{snap.BrokerConfig(""), own} {
		for k, v := range level {
			if d := config.Brokers.Lookup(k); d != nil && d.Sensitive() && !(i == 1 && plaintext[k]) {
				var err error
				if v, err = c.decodePassword(v); err != nil {
					c.log.Warn("dynamic password config cannot be decoded; ignored", "key", k, "err", err)
					continue
				}
			}
			props[k] = v
		}
	}
	return props
}

func (c *Configs) decodePassword(v string) (string, error) {
	if c.passwords == nil {
		return "", errors.New("password.encoder.secret is not set")
	}
	return c.passwords.Decode(v)
}
