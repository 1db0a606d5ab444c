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
	"kbroker/internal/dynconfig"
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

// brokerStatic is broker id's server.properties: this broker's own, or
// another's as it published them in its registration.
func (s *Server) brokerStatic(snap *meta.Snapshot, id string) config.Properties {
	if id == itoa32(s.nodeID()) {
		return s.Broker.Props
	}
	n, _ := strconv.ParseInt(id, 10, 32)
	return cluster.StaticProps(s.liveBrokerSet(snap)[int32(n)])
}

func (brokerConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	if err := s.checkBrokerName(snap, name); err != nil {
		return nil, err
	}
	if name == "" {
		return s.Configs.ClusterDefaults(snap), nil
	}
	return s.Configs.Broker(snap, name, s.brokerStatic(snap, name)), nil
}

func (brokerConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	if err := s.checkBrokerName(s.Store.Snapshot(), name); err != nil {
		return err
	}
	return s.Configs.Alter(ctx, dynconfig.Alteration{Resource: policy.ConfigResource{Type: policy.Broker, Name: name},
		Ops: ops, Replace: replace, ValidateOnly: validateOnly, By: requester(c)})
}
