package api

// FindCoordinator (key 10), v0–v6.
//
// Names the broker coordinating a group (key type 0: the leader of the
// group's `__consumer_offsets` partition) or a transactional id (key type
// 1: the leader of its `__transaction_state` partition). v4+ batches keys
// (KIP-699). Each internal topic is created on the first lookup of its
// kind, which is answered COORDINATOR_NOT_AVAILABLE (clients retry) as
// Kafka does while the topic is being created. Share groups (key type 2)
// are not served: INVALID_REQUEST.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.FindCoordinator, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		found := s.findCoordinator(ctx, c, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage = found.ErrorCode, found.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = found.NodeID, found.Host, found.Port
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, s.findCoordinator(ctx, c, req.CoordinatorType, key))
	}
	return resp, nil
}

var (
	errOffsetsTopicNew = newError(kerr.CoordinatorNotAvailable, "the group coordinator topic "+group.Topic+" is being created")
	errTxnTopicNew     = newError(kerr.CoordinatorNotAvailable, "the transaction coordinator topic "+txn.Topic+" is being created")
)

func (s *Server) findCoordinator(ctx context.Context, c *wire.Conn, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	out := kmsg.NewFindCoordinatorResponseCoordinator()
	out.Key, out.NodeID, out.Port = key, -1, -1
	var err error
	switch keyType {
	case 0:
		if !s.allowed(c, auth.OpDescribe, auth.ResourceGroup, key) {
			err = newError(kerr.GroupAuthorizationFailed, "")
		} else {
			err = s.groupCoordinator(ctx, c, key, &out)
		}
	case 1:
		if !s.allowed(c, auth.OpDescribe, auth.ResourceTransactionalID, key) {
			err = newError(kerr.TransactionalIDAuthorizationFailed, "")
		} else {
			err = s.txnCoordinator(ctx, c, key, &out)
		}
	default:
		err = newError(kerr.InvalidRequest, "unsupported coordinator key type "+strconv.Itoa(int(keyType)))
	}
	if err != nil {
		out.NodeID, out.Host, out.Port = -1, "", -1
		out.ErrorCode, out.ErrorMessage = errorCode(err)
	}
	return out
}

func (s *Server) groupCoordinator(ctx context.Context, c *wire.Conn, groupID string, out *kmsg.FindCoordinatorResponseCoordinator) error {
	if s.Groups == nil {
		return newError(kerr.CoordinatorNotAvailable, "")
	}
	snap := s.Store.Snapshot()
	t := snap.Topic(group.Topic)
	if t == nil {
		return s.createOffsetsTopic(ctx)
	}
	return s.coordinatorOf(snap, c, t, group.Partition(groupID, t.Partitions), out)
}

func (s *Server) txnCoordinator(ctx context.Context, c *wire.Conn, id string, out *kmsg.FindCoordinatorResponseCoordinator) error {
	if s.Txns == nil {
		return newError(kerr.CoordinatorNotAvailable, "")
	}
	snap := s.Store.Snapshot()
	t := snap.Topic(txn.Topic)
	if t == nil {
		return s.createTxnTopic(ctx)
	}
	return s.coordinatorOf(snap, c, t, txn.Partition(id, t.Partitions), out)
}

// coordinatorOf names the leader of partition p of internal topic t.
func (s *Server) coordinatorOf(snap *meta.Snapshot, c *wire.Conn, t *meta.Topic, p int32, out *kmsg.FindCoordinatorResponseCoordinator) error {
	leader := snap.Leader(t, p, s.nodeID()) // follows elections
	for _, b := range brokerList(s.liveBrokerSet(snap), c.Listener) {
		if b.NodeID == leader {
			out.NodeID, out.Host, out.Port = b.NodeID, b.Host, b.Port
			return nil
		}
	}
	return newError(kerr.CoordinatorNotAvailable, "the leader of "+t.Name+" partition "+itoa32(p)+" is not available")
}

// createOffsetsTopic creates `__consumer_offsets`, compacted, with
// offsets.topic.num.partitions partitions of offsets.topic.replication.factor
// replicas (no more than the live brokers). Kafka's create-topic policy
// does not apply to internal topics. Its answer is always
// COORDINATOR_NOT_AVAILABLE: the coordinators load once the topic is in the
// metadata, and the client retries.
func (s *Server) createOffsetsTopic(ctx context.Context) error {
	static := config.Layers{Static: s.Broker.Props}
	configs := map[string]string{
		"cleanup.policy": "compact",
		"segment.bytes":  config.BrokerValue("offsets.topic.segment.bytes", static),
	}
	rf := internalReplicationFactor("offsets.topic.replication.factor", static)
	if err := s.controller.CreateInternalTopic(ctx, group.Topic, s.Groups.Config().Partitions, rf, configs); err != nil {
		s.Logger.Warn("creating the internal topic failed", "topic", group.Topic, "err", err)
	}
	return errOffsetsTopicNew
}

// createTxnTopic creates `__transaction_state` as createOffsetsTopic
// creates the offsets topic: compacted, transaction.state.log.num.partitions
// partitions of transaction.state.log.replication.factor replicas,
// transaction.state.log.segment.bytes segments, and, as Kafka's
// TransactionLog sets them, min.insync.replicas =
// transaction.state.log.min.isr (lowered to the replicas a small cluster
// gives it) and no unclean leader election, whatever the broker's
// default: a transaction's state must never be lost to one.
func (s *Server) createTxnTopic(ctx context.Context) error {
	cfg := s.Txns.Config()
	static := config.Layers{Static: s.Broker.Props}
	configs := map[string]string{
		"cleanup.policy":                 "compact",
		"segment.bytes":                  cfg.SegmentBytes,
		"min.insync.replicas":            config.BrokerValue("transaction.state.log.min.isr", static),
		"unclean.leader.election.enable": "false",
	}
	rf := internalReplicationFactor("transaction.state.log.replication.factor", static)
	if err := s.controller.CreateInternalTopic(ctx, txn.Topic, cfg.Partitions, rf, configs); err != nil {
		s.Logger.Warn("creating the internal topic failed", "topic", txn.Topic, "err", err)
	}
	return errTxnTopicNew
}

// internalReplicationFactor is the replication factor config name sets
// (the catalog checked it is a short of at least 1).
func internalReplicationFactor(name string, static config.Layers) int16 {
	n, _ := strconv.Atoi(config.BrokerValue(name, static))
	return int16(n)
}
