package cluster

import (
	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// Registration is what cfg's broker publishes about itself: its id, rack,
// advertised endpoints (with the ports actually bound), and its static
// configs minus the sensitive ones (PASSWORD-typed, and keys no catalog can
// type), which are named in Hidden without a value, as DescribeConfigs
// shows them.
func Registration(cfg *config.Broker) meta.Broker {
	reg := meta.Broker{ID: cfg.NodeID, Rack: cfg.Rack, Configs: map[string]string{}}
	for _, l := range cfg.AdvertisedListeners {
		reg.Endpoints = append(reg.Endpoints, meta.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), Protocol: l.SecurityProtocol})
	}
	for _, k := range cfg.Props.Keys() {
		d := config.Brokers.Lookup(k)
		if d == nil {
			d = config.ListenerDef(k)
		}
		if d == nil || d.Sensitive() {
			reg.Hidden = append(reg.Hidden, k)
			continue
		}
		reg.Configs[k] = cfg.Props[k]
	}
	return reg
}

// StaticProps rebuilds a registered broker's server.properties as far as it
// was published: hidden keys are present with an empty value, which
// DescribeConfigs never shows.
func StaticProps(reg *meta.Broker) config.Properties {
	props := config.Properties{}
	for k, v := range reg.Configs {
		props[k] = v
	}
	for _, k := range reg.Hidden {
		props[k] = ""
	}
	return props
}

// LiveBrokers is snap's live brokers. Before self's registration reaches
// the snapshot (startup, or a broker built without a cluster in tests) it
// is self alone.
func LiveBrokers(snap *meta.Snapshot, self *config.Broker) map[int32]*meta.Broker {
	if len(snap.LiveBrokers()) > 0 {
		return snap.LiveBrokers()
	}
	reg := Registration(self)
	return map[int32]*meta.Broker{reg.ID: &reg}
}
