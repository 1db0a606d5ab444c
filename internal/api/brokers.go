package api

// The live brokers, as the metadata snapshot lists them (internal/cluster
// registers every broker at brokers/<id>), and where partitions are led.

import (
	"slices"

	"kbroker/internal/cluster"
	"kbroker/internal/meta"
)

// liveBrokerSet is snap's live brokers. Before this broker's registration
// reaches the snapshot (startup, or a server built without a cluster in
// tests) it is this broker alone.
func (s *Server) liveBrokerSet(snap *meta.Snapshot) map[int32]*meta.Broker {
	return cluster.LiveBrokers(snap, s.Broker)
}

// sortedBrokers lists the live brokers by id.
func sortedBrokers(live map[int32]*meta.Broker) []*meta.Broker {
	out := make([]*meta.Broker, 0, len(live))
	for _, b := range live {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *meta.Broker) int { return int(a.ID) - int(b.ID) })
	return out
}
