package api

// The live brokers, as the metadata snapshot lists them (internal/cluster
// registers every broker at brokers/<id>), and where partitions are led.

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/cluster"
	"kbroker/internal/meta"
)

// liveBrokerSet is snap's live brokers. Before this broker's registration
// reaches the snapshot (startup, or a server built without a cluster in
// tests) it is this broker alone.
func (s *Server) liveBrokerSet(snap *meta.Snapshot) map[int32]*meta.Broker {
	if len(snap.LiveBrokers()) > 0 {
		return snap.LiveBrokers()
	}
	self := cluster.Registration(s.Broker)
	return map[int32]*meta.Broker{self.ID: &self}
}

// liveBrokers is how many brokers can hold replicas.
func (s *Server) liveBrokers() int { return len(s.liveBrokerSet(s.Store.Snapshot())) }

// checkReplicationFactor applies Kafka's rule (no more replicas than live
// brokers), then kbroker's own: one replica per partition.
func (s *Server) checkReplicationFactor(rf int16) error {
	if live := s.liveBrokers(); int(rf) > live {
		return newError(kerr.InvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			rf, rf, live))
	}
	if rf > 1 {
		return newError(kerr.InvalidReplicationFactor, fmt.Sprintf("Replication factor %d is not supported: kbroker keeps one replica of each partition (its leader); use a replication factor of 1 or -1.", rf))
	}
	return nil
}

// place picks a leader for each of count new partitions across the live
// brokers, rack-aware round-robin from a random start (as Kafka does, so
// that topics do not all begin on the same broker).
func (s *Server) place(snap *meta.Snapshot, count int32) [][]int32 {
	live := s.liveBrokerSet(snap)
	return cluster.Place(live, count, rand.IntN(len(live)))
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
