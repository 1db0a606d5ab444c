package api

// AddPartitionsToTxn (key 24), v0–v5.
//
// v0–v3 (clients): adds partitions to the producer's transaction at its
// coordinator. TRANSACTIONAL_ID WRITE is checked first (every partition
// gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then TOPIC WRITE (internal
// topics are never writable this way) and the partition's existence per
// partition; if any partition fails, the others get OPERATION_NOT_ATTEMPTED
// and nothing is added, as Kafka does. From v2 a fenced producer gets
// PRODUCER_FENCED, before that INVALID_PRODUCER_EPOCH. v4+ (broker to
// coordinator, KIP-890) needs CLUSTER_ACTION (a top-level
// CLUSTER_AUTHORIZATION_FAILED) and nothing else, the broker being trusted;
// it batches transactions and, with VerifyOnly, only checks that the
// partitions are in the ongoing transaction (INVALID_TXN_STATE for one
// that is not). v5 adds TRANSACTION_ABORTABLE, which only TV2 answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, handleAddPartitionsToTxn) }

// txnTopic is one topic of an AddPartitionsToTxn, in either layout.
type txnTopic struct {
	topic      string
	partitions []int32
}

func handleAddPartitionsToTxn(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	snap := s.Store.Snapshot()
	if req.Version < 4 {
		topics := make([]txnTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := s.addPartitionsToTxn(ctx, c, snap, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics)
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !s.allowed(c, auth.OpClusterAction, auth.ResourceCluster, auth.ClusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, tx := range req.Transactions {
		topics := make([]txnTopic, len(tx.Topics))
		for i, t := range tx.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := s.addPartitionsToTxn(ctx, c, snap, req.Version, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.topic
			for j, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// addPartitionsToTxn answers one transaction: a code per partition of
// topics, in their order.
func (s *Server) addPartitionsToTxn(ctx context.Context, c *wire.Conn, snap *meta.Snapshot, version int16, id string, pid int64, epoch int16, verifyOnly bool, topics []txnTopic) [][]int16 {
	codes := make([][]int16, len(topics))
	fill := func(code int16) [][]int16 {
		for i, t := range topics {
			codes[i] = make([]int16, len(t.partitions))
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	switch {
	case version < 4 && !s.transactionalIDAllowed(c, id):
		return fill(kerr.TransactionalIDAuthorizationFailed.Code)
	case s.Txns == nil:
		return fill(kerr.CoordinatorNotAvailable.Code)
	}
	fill(0)
	var parts []txn.TopicPartition
	failed := false
	for i, t := range topics {
		allowed := version >= 4 || (!internalTopic(t.topic) && s.allowed(c, auth.OpWrite, auth.ResourceTopic, t.topic))
		topic := snap.Topic(t.topic)
		for j, p := range t.partitions {
			switch {
			case !allowed:
				codes[i][j], failed = kerr.TopicAuthorizationFailed.Code, true
			case topic == nil || p < 0 || p >= topic.Partitions:
				codes[i][j], failed = kerr.UnknownTopicOrPartition.Code, true
			default:
				parts = append(parts, txn.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	if failed {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = kerr.OperationNotAttempted.Code
				}
			}
		}
		return codes
	}
	if verifyOnly {
		top, perPart := s.Txns.Verify(ctx, id, pid, epoch, parts)
		if top != nil {
			return fill(txnErrorCode(top, version, 2))
		}
		k := 0
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = txnErrorCode(perPart[k], version, 2)
				k++
			}
		}
		return codes
	}
	// v5 without VerifyOnly is a partition leader adding the partition of a
	// Produce v12+ (TV2); v0-v3 come from TV1 clients.
	tv := txn.TV1
	if version >= 5 {
		tv = txn.TV2
	}
	return fill(txnErrorCode(s.Txns.AddPartitionsAt(ctx, id, pid, epoch, parts, tv), version, 2))
}
