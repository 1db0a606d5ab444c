package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/coordinator"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/replica"
	"kbroker/internal/txn"
)

// startTransactions starts the transaction coordinator and keeps its shards
// on the `__transaction_state` partitions this broker leads, as
// startGroups does for groups. Its markers go to the group coordinator for
// `__consumer_offsets` partitions and to the partition logs otherwise.
func (b *Broker) startTransactions(parts *replica.Partitions, groups *group.Coordinator, producerIDs *txn.ProducerIDs) *txn.Coordinator {
	// A marker waits for the in-sync replicas of its partition at most
	// request.timeout.ms, as Kafka's WriteTxnMarkers append does.
	markerTimeout := b.msConfig("request.timeout.ms")
	markers := func(ctx context.Context, m txn.Marker) error {
		return b.writeTxnMarker(ctx, parts, groups, m, markerTimeout)
	}
	t := txn.New(txn.ConfigFrom(config.Layers{Static: b.cfg.Props}), producerIDs, markers,
		coordinator.RealClock{}, b.loggers.Logger("kbroker.txn"))
	// A transaction state write waits for the topic's in-sync replicas at
	// most request.timeout.ms, as Kafka's TransactionStateManager does.
	timeout := b.msConfig("request.timeout.ms")
	open := func(snap *meta.Snapshot, topic *meta.Topic, p int32) (coordinator.Log, int32, error) {
		l, err := coordinator.NewPartitionLog(parts, b.store, snap, topic, p, timeout)
		if err != nil {
			return nil, 0, err
		}
		// The coordinator epoch in markers is the partition's leader epoch,
		// which every election raises.
		return l, snap.Partition(topic, p).LeaderEpoch, nil
	}
	reconcile := func(snap *meta.Snapshot) {
		if err := t.Reconcile(snap, b.cfg.NodeID, open); err != nil {
			b.log.Error("loading transaction coordinator partitions", "err", err)
		}
	}
	reconcile(b.store.Snapshot())
	b.store.OnChange(func(ev meta.Event) {
		if internalTopicChanged(ev, txn.Topic) {
			reconcile(ev.Cur)
		}
	})
	return t
}

// writeTxnMarker writes m to its partition when this broker leads it:
// through the group coordinator for a `__consumer_offsets` partition (it
// settles the transaction's offsets), else through the partition log (the
// data plane keeps the LSO and the aborted-transaction index). A partition
// led by another broker, `__consumer_offsets` included, gets a
// WriteTxnMarkers request to its leader, as Kafka's
// TransactionMarkerChannelManager sends; the group coordinator here has no
// shard for an offsets partition another broker leads, so a marker handed
// to it would be refused NOT_COORDINATOR, retried for ever, and the
// transaction left in PrepareCommit or PrepareAbort.
func (b *Broker) writeTxnMarker(ctx context.Context, parts *replica.Partitions, groups *group.Coordinator, m txn.Marker, timeout time.Duration) error {
	snap := b.store.Snapshot()
	t := snap.Topic(m.Topic)
	if t == nil || m.Partition < 0 || m.Partition >= t.Partitions {
		return txn.ErrPartitionGone
	}
	marker := replica.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}
	leader := snap.Leader(t, m.Partition, b.cfg.NodeID)
	switch {
	case leader != b.cfg.NodeID:
		return b.markerSender.send(ctx, snap, leader, m)
	case m.Topic == group.Topic:
		return groups.CompleteTransaction(ctx, m.Partition, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch)
	default:
		return parts.WriteTxnMarker(ctx, snap, m.Topic, m.Partition, marker, timeout)
	}
}

// routeTxnMarker is the API server's WriteTxnMarker: a marker another
// broker's coordinator sends for a partition led here. Markers for
// `__consumer_offsets` settle a transaction's offsets, so they go through
// the group coordinator; all others to the partition log, whose wait for
// the in-sync replicas is bounded by request.timeout.ms.
func (b *Broker) routeTxnMarker(parts *replica.Partitions) func(ctx context.Context, topic string, partition int32, m replica.TxnMarker) error {
	timeout := b.msConfig("request.timeout.ms")
	return func(ctx context.Context, topic string, partition int32, m replica.TxnMarker) error {
		if topic == group.Topic {
			return offsetsMarkerAnswer(b.groups.CompleteTransaction(ctx, partition, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch))
		}
		return parts.WriteTxnMarker(ctx, b.store.Snapshot(), topic, partition, m, timeout)
	}
}

// offsetsMarkerAnswer is Kafka's answer for a marker the group
// coordinator here could not take because it has no ready shard for the
// `__consumer_offsets` partition (another broker leads it, or it is still
// loading): NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and
// COORDINATOR_LOAD_IN_PROGRESS become NOT_LEADER_OR_FOLLOWER, the error a
// transaction coordinator expects of a partition leader, as
// KafkaApis.handleWriteTxnMarkersRequest translates them. Kafka's
// coordinator and kbroker's retry both, but kadm's WriteTxnMarkers (what
// `kbroker transactions abort` sends) refreshes the partition's leader
// and retries only on NOT_LEADER_OR_FOLLOWER.
func offsetsMarkerAnswer(err error) error {
	switch {
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return fmt.Errorf("%w: %v", kerr.NotLeaderForPartition, err)
	}
	return err
}

// markerSender sends markers to partition leaders on other brokers, with
// one kgo client per broker, made on first use.
type markerSender struct {
	interBroker *interBroker // the listener and the client options (interbroker.go)

	mu      sync.Mutex
	clients map[int32]*markerClient
}

type markerClient struct {
	addr string
	cl   *kgo.Client
}

func (ms *markerSender) send(ctx context.Context, snap *meta.Snapshot, leader int32, m txn.Marker) error {
	cl, err := ms.client(snap, leader)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	wm := kmsg.NewWriteTxnMarkersRequestMarker()
	wm.ProducerID, wm.ProducerEpoch, wm.Committed, wm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	wt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	wt.Topic, wt.Partitions = m.Topic, []int32{m.Partition}
	wm.Topics = append(wm.Topics, wt)
	req.Markers = append(req.Markers, wm)
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return fmt.Errorf("no client for broker %d", leader)
	}
	resp, err := req.RequestWith(ctx, seeds[0])
	if err != nil {
		return fmt.Errorf("sending a transaction marker to broker %d: %w", leader, err)
	}
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
					return txn.ErrPartitionGone
				}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("broker %d refused the transaction marker for %s-%d: %w", leader, m.Topic, m.Partition, err)
				}
			}
		}
	}
	return nil
}

// client is the kgo client of broker id at its inter-broker endpoint,
// authenticated as the listener's security protocol asks, remade when the
// broker's address changed.
func (ms *markerSender) client(snap *meta.Snapshot, id int32) (*kgo.Client, error) {
	ep, err := ms.interBroker.endpoint(snap, id)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if c := ms.clients[id]; c != nil {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
	}
	cl, err := ms.interBroker.newClient(id, addr)
	if err != nil {
		return nil, err
	}
	if ms.clients == nil {
		ms.clients = map[int32]*markerClient{}
	}
	ms.clients[id] = &markerClient{addr: addr, cl: cl}
	return cl, nil
}

// close closes every client.
func (ms *markerSender) close() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for id, c := range ms.clients {
		c.cl.Close()
		delete(ms.clients, id)
	}
}

// verifyTxnPartitions is Produce's KIP-890 check, for all the
// transactional partitions of one request: each must be in the producer's
// ongoing transaction (part 1), or, with add (Produce v12+ under TV2, part
// 2), is added to it. The coordinator of the transactional id answers it
// here when this broker leads its `__transaction_state` partition;
// otherwise its broker is asked with one AddPartitionsToTxn for all the
// partitions, broker to broker, as Kafka's AddPartitionsToTxnManager
// does: v4 with VerifyOnly to verify, v5 without it to add (v5 is the
// version whose coordinator adds at TV2). The answer has an error, or
// nil, per partition.
func (b *Broker) verifyTxnPartitions(ctx context.Context, transactionalID string, producerID int64, epoch int16, partitions []txn.TopicPartition, add bool) []error {
	if b.txns.Led(b.txns.Partition(transactionalID)) {
		return b.txns.VerifyPartitions(ctx, transactionalID, producerID, epoch, partitions, add)
	}
	resp, err := b.askTxnCoordinator(ctx, transactionalID, producerID, epoch, partitions, add)
	if err != nil {
		return sameError(len(partitions), err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil || len(resp.Transactions) == 0 {
		if err == nil {
			err = kerr.UnknownServerError // an answer without the transaction
		}
		if errors.Is(err, kerr.ClusterAuthorizationFailed) {
			// The producer must not see the inter-broker principal's
			// refusal: the verification did not complete (Kafka's
			// AddPartitionsToTxnManager).
			err = kerr.InvalidTxnState
		}
		return sameError(len(partitions), verifyAnswer(err))
	}
	answered := map[txn.TopicPartition]error{}
	for _, t := range resp.Transactions[0].Topics {
		for _, p := range t.Partitions {
			answered[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = verifyAnswer(kerr.ErrorForCode(p.ErrorCode))
		}
	}
	errs := make([]error, len(partitions))
	for i, tp := range partitions {
		err, ok := answered[tp]
		if !ok {
			// Not answered, so not verified: the producer retries.
			err = fmt.Errorf("%w: the transaction coordinator did not answer for %s-%d", kerr.CoordinatorNotAvailable, tp.Topic, tp.Partition)
		}
		errs[i] = err
	}
	return errs
}

// askTxnCoordinator sends partitions to the transaction coordinator of
// transactionalID, on another broker, in one AddPartitionsToTxn.
func (b *Broker) askTxnCoordinator(ctx context.Context, transactionalID string, producerID int64, epoch int16, partitions []txn.TopicPartition, add bool) (*kmsg.AddPartitionsToTxnResponse, error) {
	snap := b.store.Snapshot()
	st := snap.Topic(txn.Topic)
	if st == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	coordinator := snap.Leader(st, b.txns.Partition(transactionalID), b.cfg.NodeID)
	if coordinator < 0 || coordinator == b.cfg.NodeID {
		return nil, kerr.CoordinatorNotAvailable
	}
	cl, err := b.markerSender.client(snap, coordinator)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = transactionalID, producerID, epoch, !add
	for _, tp := range partitions {
		if n := len(tr.Topics); n > 0 && tr.Topics[n-1].Topic == tp.Topic {
			tr.Topics[n-1].Partitions = append(tr.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = tp.Topic, []int32{tp.Partition}
		tr.Topics = append(tr.Topics, tt)
	}
	req.Transactions = append(req.Transactions, tr)
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	resp, err := req.RequestWith(ctx, seeds[0])
	if err != nil {
		// Kafka's AddPartitionsToTxnManager answers a lost connection or a
		// timeout NETWORK_EXCEPTION.
		return nil, fmt.Errorf("%w: asking the transaction coordinator on broker %d: %v", kerr.NetworkException, coordinator, err)
	}
	return resp, nil
}

// sameError is err for each of n partitions.
func sameError(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// verifyAnswer maps a remote coordinator's answer as VerifyPartition
// does for a local one.
func verifyAnswer(err error) error {
	switch {
	case errors.Is(err, kerr.ProducerFenced):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, kerr.InvalidProducerIDMapping):
		return kerr.InvalidTxnState
	}
	return err
}
