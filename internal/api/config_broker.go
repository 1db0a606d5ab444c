package api

// The BROKER config resource. Name "<id>" is one broker: every config of the
// broker catalog with its value and source, plus the static keys no catalog
// knows (reported sensitive with a null value, as Kafka does for keys whose
// type it cannot tell). Name "" is the cluster-wide dynamic default: only
// the keys set there. Any broker answers for any live broker's id (other
// brokers' static configs come from their registrations, published without
// sensitive values). Only dynamic keys may be altered: per-broker ones only
// with a broker id; the cluster-wide ones at either level. Overrides live in
// the store under config/brokers/<id> and config/brokers/<default>.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/cluster"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
	"kbroker/policy"
)

type brokerConfigResource struct{}

// checkBrokerName accepts "" (the cluster default), this broker's id, or
// the id of any live broker: whichever broker receives the request answers
// for the cluster, from the registration each broker publishes (its
// non-sensitive static configs) and the dynamic configs of the shared store.
func (s *Server) checkBrokerName(snap *meta.Snapshot, name string) error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return newError(kerr.InvalidRequest, fmt.Sprintf("Broker id must be an integer, but it is: %s", name))
	}
	if _, live := s.liveBrokerSet(snap)[int32(id)]; !live && int32(id) != s.nodeID() {
		return newError(kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id %s: no live broker of this cluster has it", name))
	}
	return nil
}

// brokerLayers are where broker id's config values come from, and its
// static configs: this broker's own, or another's as it published them.
func (s *Server) brokerLayers(snap *meta.Snapshot, id string) (config.Layers, config.Properties) {
	layers := s.Logs.Layers(snap, "")
	if id == itoa32(s.nodeID()) {
		return layers, s.Broker.Props
	}
	n, _ := strconv.ParseInt(id, 10, 32)
	props := cluster.StaticProps(s.liveBrokerSet(snap)[int32(n)])
	return config.Layers{Broker: snap.BrokerConfig(id), ClusterDefault: layers.ClusterDefault, Static: props}, props
}

func (brokerConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]configEntry, error) {
	if err := s.checkBrokerName(snap, name); err != nil {
		return nil, err
	}
	if name == "" {
		layers := s.Logs.Layers(snap, "")
		var out []configEntry
		defaults := config.Layers{ClusterDefault: layers.ClusterDefault}
		for key := range layers.ClusterDefault {
			d := config.Brokers.Lookup(key)
			if d == nil {
				continue
			}
			e := config.ResolveBroker(d, defaults)
			e.Synonyms = onlyDefaultLevel(e.Synonyms)
			out = append(out, configEntry{Entry: e, def: d, sensitive: d.Sensitive(), readOnly: d.Mode == config.ReadOnly})
		}
		return out, nil
	}
	layers, props := s.brokerLayers(snap, name)
	var out []configEntry
	for _, d := range config.Brokers.Defs() {
		out = append(out, configEntry{Entry: config.ResolveBroker(d, layers), def: d, sensitive: d.Sensitive(), readOnly: d.Mode == config.ReadOnly})
	}
	out = append(out, listenerEntries(layers)...)
	for _, key := range props.Keys() {
		if config.Brokers.Lookup(key) != nil {
			continue
		}
		out = append(out, configEntry{Entry: config.Entry{Name: key, Source: config.SourceStaticBroker,
			Synonyms: []config.Entry{{Name: key, Source: config.SourceStaticBroker}}}, sensitive: true, readOnly: true})
	}
	return out, nil
}

func onlyDefaultLevel(syns []config.Entry) []config.Entry {
	var out []config.Entry
	for _, e := range syns {
		if e.Source == config.SourceDynamicDefaultBroker {
			out = append(out, e)
		}
	}
	return out
}

func (brokerConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []configOp, replace, validateOnly bool) error {
	if err := s.checkBrokerName(s.Store.Snapshot(), name); err != nil {
		return err
	}
	err := storedConfigChange{
		kind:     meta.BrokerConfigs,
		resource: policy.ConfigResource{Type: policy.Broker, Name: name},
		catalog:  config.Brokers,
		check: func(d *config.Def, key, value string) error {
			switch {
			case d.Mode == config.ReadOnly:
				return newError(kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", key))
			case d.Mode == config.PerBroker && name == "":
				return newError(kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", key))
			}
			if err := d.Validate(value); err != nil {
				return newError(kerr.InvalidConfig, err.Error())
			}
			return nil
		},
		checkAll: func(next map[string]string) error {
			return s.checkListenerConfigs(name, ops, next)
		},
	}.apply(ctx, s, c, ops, replace, validateOnly)
	if err == nil && !validateOnly {
		s.listenerConfigsAltered(name, ops)
	}
	return err
}

// listenerConfigsAltered names the keys of a stored alter of this broker's
// configs to its listeners. Kafka sends every altered broker key on, even
// one set to its current value (KAFKA-14136), so that a key store altered
// to the path it already has is re-read when the file changed; the store
// sees no change there and tells no one.
func (s *Server) listenerConfigsAltered(name string, ops []configOp) {
	if s.ListenerConfigsAltered == nil || name != itoa32(s.nodeID()) {
		return
	}
	keys := make([]string, 0, len(ops))
	for _, op := range ops {
		keys = append(keys, op.name)
	}
	s.ListenerConfigsAltered(keys)
}

// checkListenerConfigs refuses, as Kafka's reconfiguration validation does,
// a change to this broker's configs that its listeners could not apply (a
// certificate that does not match its key, an unreadable key store, a bad
// JAAS line). Another broker's files are that broker's to check.
func (s *Server) checkListenerConfigs(name string, ops []configOp, next map[string]string) error {
	if s.CheckListenerConfigs == nil || name != itoa32(s.nodeID()) {
		return nil
	}
	fresh := map[string]bool{}
	for _, op := range ops {
		fresh[op.name] = true
	}
	if err := s.CheckListenerConfigs(next, func(k string) bool { return fresh[k] }); err != nil {
		return newError(kerr.InvalidConfig, err.Error())
	}
	return nil
}
