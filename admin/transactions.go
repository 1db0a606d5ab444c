package admin

// Transactions, as Apache Kafka's Admin client and kafka-transactions.sh
// see them (KIP-664): ListTransactions (66) from every broker,
// DescribeTransactions (65) from each id's coordinator, DescribeProducers
// (61) from a partition's leader or a chosen replica, the search for
// hanging transactions built on those three, and the abort of one as a
// WriteTxnMarkers (27) request to the partition's leader, which is what
// Kafka's Admin.abortTransaction sends.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TransactionListing is one transactional id as ListTransactions reports it.
type TransactionListing struct {
	TransactionalID string `json:"transactional_id"`
	// Coordinator is the id of the broker coordinating the id.
	Coordinator int32 `json:"coordinator"`
	ProducerID  int64 `json:"producer_id"`
	// State is Kafka's spelling: Empty, Ongoing, PrepareCommit,
	// PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence.
	State string `json:"state"`
}

// ListTransactionsFilter narrows ListTransactions; zero fields match
// everything. A broker applies the filters (States and ProducerIDs from
// v0, MinDuration from v1, Pattern from v2); one too old for a filter
// given refuses the request rather than answering unfiltered.
type ListTransactionsFilter struct {
	States      []string
	ProducerIDs []int64
	// MinDuration keeps transactions open at least that long (Kafka's
	// --duration-filter); ids with no transaction open never match it.
	MinDuration time.Duration
	// Pattern is a regular expression the whole id must match (Java's
	// Matcher.matches, as Kafka 4.1's brokers apply it).
	Pattern string
}

// ListTransactions lists the transactional ids of every broker, sorted by
// id. A broker that fails makes the call fail, as Kafka's
// allByBrokerId does, since a partial listing would look complete.
func (c *Client) ListTransactions(ctx context.Context, f ListTransactionsFilter) ([]TransactionListing, error) {
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters, req.ProducerIDFilters = f.States, f.ProducerIDs
	if f.MinDuration > 0 {
		req.DurationFilterMillis = f.MinDuration.Milliseconds()
	}
	if f.Pattern != "" {
		req.TransactionalIDPattern = kmsg.StringPtr(f.Pattern)
	}
	out := []TransactionListing{}
	var errs []error
	for _, sh := range c.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", sh.Meta.NodeID, sh.Err))
			continue
		}
		resp := sh.Resp.(*kmsg.ListTransactionsResponse)
		if err := codeError(fmt.Sprintf("broker %d", sh.Meta.NodeID), resp.ErrorCode, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		if len(resp.UnknownStateFilters) > 0 {
			errs = append(errs, clientError(fmt.Sprintf("broker %d", sh.Meta.NodeID), "unknown transaction states %s", strings.Join(resp.UnknownStateFilters, ", ")))
		}
		for _, ts := range resp.TransactionStates {
			out = append(out, TransactionListing{TransactionalID: ts.TransactionalID, Coordinator: sh.Meta.NodeID,
				ProducerID: ts.ProducerID, State: ts.TransactionState})
		}
	}
	slices.SortFunc(out, func(a, b TransactionListing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out, joinErrs(errs)
}

// TransactionDescription is one transactional id as its coordinator
// describes it.
type TransactionDescription struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	State           string `json:"state"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	TimeoutMillis   int32  `json:"transaction_timeout_ms"`
	// StartMillis is when the open transaction began, -1 with none open.
	StartMillis int64 `json:"transaction_start_time_ms"`
	// Partitions are those written in the open transaction, or, while its
	// markers are being written (Prepare*), those still waiting for one.
	Partitions []TopicPartition `json:"topic_partitions"`
	// Err is this id's failure (TRANSACTIONAL_ID_NOT_FOUND for an id the
	// coordinator does not know).
	Err error `json:"-"`
}

// TransactionDescriptions are the results of DescribeTransactions.
type TransactionDescriptions []TransactionDescription

// All joins the failures of every id.
func (ds TransactionDescriptions) All() error {
	var errs []error
	for _, d := range ds {
		errs = append(errs, d.Err)
	}
	return joinErrs(errs)
}

// DescribeTransactions describes transactional ids, each asked of its
// coordinator, in the order given.
func (c *Client) DescribeTransactions(ctx context.Context, ids ...string) (TransactionDescriptions, error) {
	out := make(TransactionDescriptions, len(ids))
	at := map[string][]int{}
	for i, id := range ids {
		out[i] = TransactionDescription{TransactionalID: id, Coordinator: -1, StartMillis: -1, Err: clientError("transactional id "+id, "no answer")}
		at[id] = append(at[id], i)
	}
	if len(ids) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = slices.Sorted(maps.Keys(at))
	for _, sh := range c.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			for _, id := range sh.Req.(*kmsg.DescribeTransactionsRequest).TransactionalIDs {
				for _, i := range at[id] {
					out[i].Err = &Error{Resource: "transactional id " + id, Err: sh.Err}
				}
			}
			continue
		}
		for _, ts := range sh.Resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
			d := TransactionDescription{TransactionalID: ts.TransactionalID, Coordinator: sh.Meta.NodeID, State: ts.State,
				ProducerID: ts.ProducerID, ProducerEpoch: ts.ProducerEpoch, TimeoutMillis: ts.TimeoutMillis,
				StartMillis: ts.StartTimestamp, Partitions: []TopicPartition{},
				Err: codeError("transactional id "+ts.TransactionalID, ts.ErrorCode, nil)}
			for _, t := range ts.Topics {
				for _, p := range t.Partitions {
					d.Partitions = append(d.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			SortTopicPartitions(d.Partitions)
			for _, i := range at[ts.TransactionalID] {
				out[i] = d
			}
		}
	}
	return out, nil
}

// ProducerState is one active producer of a partition, as the partition's
// log keeps it (DescribeProducers).
type ProducerState struct {
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int32 `json:"producer_epoch"`
	// CoordinatorEpoch is that of the last marker the partition took from
	// this producer's coordinator, -1 before any.
	CoordinatorEpoch int32 `json:"latest_coordinator_epoch"`
	LastSequence     int32 `json:"last_sequence"`
	LastTimestamp    int64 `json:"last_timestamp"`
	// CurrentTxnStartOffset is the first offset of the producer's open
	// transaction on the partition, -1 with none open.
	CurrentTxnStartOffset int64 `json:"current_transaction_start_offset"`
}

// PartitionProducers are the active producers of one partition.
type PartitionProducers struct {
	TopicPartition
	Producers []ProducerState `json:"producers"`
	Err       error           `json:"-"`
}

// PartitionProducersList are the results of DescribeProducers.
type PartitionProducersList []PartitionProducers

// All joins the failures of every partition.
func (ps PartitionProducersList) All() error {
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Err)
	}
	return joinErrs(errs)
}

// AnyBroker, as DescribeProducers' broker, asks each partition's leader.
const AnyBroker int32 = -1

// DescribeProducers describes the active producers of partitions, in the
// order given: from each partition's leader, or with broker set (not
// AnyBroker) from that broker's replica, as kafka-transactions.sh
// describe-producers --broker-id does.
func (c *Client) DescribeProducers(ctx context.Context, broker int32, tps ...TopicPartition) (PartitionProducersList, error) {
	out := make(PartitionProducersList, len(tps))
	at := map[TopicPartition][]int{}
	req := kmsg.NewPtrDescribeProducersRequest()
	for i, tp := range tps {
		out[i] = PartitionProducers{TopicPartition: tp, Producers: []ProducerState{}, Err: clientError("partition "+tp.String(), "no answer")}
		if len(at[tp]) == 0 {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic = tp.Topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, tp.Partition)
		}
		at[tp] = append(at[tp], i)
	}
	if len(tps) == 0 {
		return out, nil
	}
	var shards []kgo.ResponseShard
	if broker == AnyBroker {
		shards = c.cl.RequestSharded(ctx, req)
	} else {
		resp, err := req.RequestWith(ctx, c.cl.Broker(int(broker)))
		shards = []kgo.ResponseShard{{Meta: kgo.BrokerMetadata{NodeID: broker}, Req: req, Resp: resp, Err: err}}
	}
	for _, sh := range shards {
		if sh.Err != nil {
			for _, rt := range sh.Req.(*kmsg.DescribeProducersRequest).Topics {
				for _, p := range rt.Partitions {
					tp := TopicPartition{Topic: rt.Topic, Partition: p}
					for _, i := range at[tp] {
						out[i].Err = &Error{Resource: "partition " + tp.String(), Err: sh.Err}
					}
				}
			}
			continue
		}
		for _, rt := range sh.Resp.(*kmsg.DescribeProducersResponse).Topics {
			for _, rp := range rt.Partitions {
				tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				pp := PartitionProducers{TopicPartition: tp, Producers: []ProducerState{},
					Err: codeError("partition "+tp.String(), rp.ErrorCode, rp.ErrorMessage)}
				for _, ap := range rp.ActiveProducers {
					pp.Producers = append(pp.Producers, ProducerState{ProducerID: ap.ProducerID, ProducerEpoch: ap.ProducerEpoch,
						CoordinatorEpoch: ap.CoordinatorEpoch, LastSequence: ap.LastSequence, LastTimestamp: ap.LastTimestamp,
						CurrentTxnStartOffset: ap.CurrentTxnStartOffset})
				}
				for _, i := range at[tp] {
					out[i] = pp
				}
			}
		}
	}
	return out, nil
}

// AbortSpec names the open transaction of one producer on one partition:
// what a WriteTxnMarkers abort needs.
type AbortSpec struct {
	TopicPartition
	ProducerID       int64 `json:"producer_id"`
	ProducerEpoch    int16 `json:"producer_epoch"`
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
}

func (s AbortSpec) String() string {
	return fmt.Sprintf("AbortTransactionSpec(topicPartition=%s, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)",
		s.TopicPartition, s.ProducerID, s.ProducerEpoch, s.CoordinatorEpoch)
}

// AbortSpecAt finds the open transaction that starts at startOffset of tp
// (DescribeProducers on the leader), as kafka-transactions.sh abort
// --start-offset does. A producer the partition has seen no marker for
// yet has coordinator epoch -1; the abort then goes out with 0, which no
// coordinator epoch is below.
func (c *Client) AbortSpecAt(ctx context.Context, tp TopicPartition, startOffset int64) (AbortSpec, error) {
	ps, err := c.DescribeProducers(ctx, AnyBroker, tp)
	if err != nil {
		return AbortSpec{}, err
	}
	if err := ps.All(); err != nil {
		return AbortSpec{}, fmt.Errorf("Failed to validate producer state for partition %s: %w", tp, err)
	}
	for _, p := range ps[0].Producers {
		if p.CurrentTxnStartOffset >= 0 && p.CurrentTxnStartOffset == startOffset {
			return AbortSpec{TopicPartition: tp, ProducerID: p.ProducerID, ProducerEpoch: int16(p.ProducerEpoch),
				CoordinatorEpoch: max(p.CoordinatorEpoch, 0)}, nil
		}
	}
	return AbortSpec{}, &Error{Resource: "partition " + tp.String(), Err: ErrNoOpenTransaction,
		Message: fmt.Sprintf("Could not find any open transactions starting at offset %d on partition %s", startOffset, tp)}
}

// ErrNoOpenTransaction is AbortSpecAt's error when no producer has a
// transaction open at the offset.
var ErrNoOpenTransaction = errors.New("no open transaction")

// AbortTransaction writes an abort marker for spec's producer to spec's
// partition: a WriteTxnMarkers request to the partition's leader, which
// ends the transaction there (the last stable offset moves past it and
// read_committed consumers skip its records). It needs ClusterAction on
// the cluster where an authorizer runs. It is meant for a transaction
// left hanging on a partition (its coordinator no longer knows it); an
// abort of a live transaction fences nobody and its coordinator's own
// markers still follow.
func (c *Client) AbortTransaction(ctx context.Context, spec AbortSpec) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = spec.ProducerID, spec.ProducerEpoch, false, spec.CoordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = spec.Topic, []int32{spec.Partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resource := "partition " + spec.TopicPartition.String()
	for _, sh := range c.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			return &Error{Resource: resource, Err: sh.Err}
		}
		for _, rm := range sh.Resp.(*kmsg.WriteTxnMarkersResponse).Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					if err := codeError(resource, rp.ErrorCode, nil); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// HangingFilter is the scope of FindHangingTransactions: the partitions
// with a replica on Broker, or Topic (Partition of it when not -1).
type HangingFilter struct {
	Broker    int32 // AnyBroker: not by broker
	Topic     string
	Partition int32 // -1: every partition of Topic
	// MaxTransactionTimeout is the longest transaction timeout any
	// producer uses (kafka-transactions.sh: 15 minutes); a transaction
	// open longer cannot be live.
	MaxTransactionTimeout time.Duration
}

// HangingTransaction is an open transaction on a partition that its
// coordinator will never end.
type HangingTransaction struct {
	TopicPartition
	ProducerState
}

// FindHangingTransactions finds, as kafka-transactions.sh find-hanging
// does, the open transactions on the partitions of f whose producer was
// last heard of longer than MaxTransactionTimeout ago and whose
// coordinator either does not know the producer id or does not have the
// partition in the id's transaction: nothing will write their marker, and
// they hold the last stable offset back until aborted.
func (c *Client) FindHangingTransactions(ctx context.Context, f HangingFilter, now time.Time) ([]HangingTransaction, error) {
	if f.Topic == "" && f.Broker == AnyBroker {
		return nil, clientError("", "the search for hanging transactions needs a topic or a broker id")
	}
	tps, err := c.partitionsToSearch(ctx, f)
	if err != nil {
		return nil, err
	}
	var candidates []HangingTransaction
	for batch := range slices.Chunk(tps, 500) { // Kafka's MAX_BATCH_SIZE: no giant request
		ps, err := c.DescribeProducers(ctx, f.Broker, batch...)
		if err != nil {
			return nil, err
		}
		if err := ps.All(); err != nil {
			return nil, err
		}
		for _, pp := range ps {
			for _, p := range pp.Producers {
				if p.CurrentTxnStartOffset >= 0 && now.UnixMilli()-p.LastTimestamp > f.MaxTransactionTimeout.Milliseconds() {
					candidates = append(candidates, HangingTransaction{TopicPartition: pp.TopicPartition, ProducerState: p})
				}
			}
		}
	}
	if len(candidates) == 0 {
		return []HangingTransaction{}, nil
	}
	var pids []int64
	for _, h := range candidates {
		pids = append(pids, h.ProducerID)
	}
	slices.Sort(pids)
	listed, err := c.ListTransactions(ctx, ListTransactionsFilter{ProducerIDs: slices.Compact(pids)})
	if err != nil {
		return nil, err
	}
	idOf := map[int64]string{}
	for _, l := range listed {
		idOf[l.ProducerID] = l.TransactionalID
	}
	var ids []string
	for _, id := range idOf {
		ids = append(ids, id)
	}
	ds, err := c.DescribeTransactions(ctx, ids...)
	if err != nil {
		return nil, err
	}
	described := map[string]*TransactionDescription{}
	for i := range ds {
		switch d := &ds[i]; {
		case d.Err == nil:
			described[d.TransactionalID] = d
		case !errors.Is(d.Err, kerr.TransactionalIDNotFound):
			return nil, d.Err
		}
	}
	return hangingAmong(candidates, idOf, described), nil
}

// hangingAmong keeps the candidates no coordinator will end: those of a
// producer id no coordinator lists, of an id it no longer knows, or on a
// partition the id's transaction does not have. A partition the
// coordinator still lists gets its marker from it (the transaction is
// ongoing or its markers are being written).
func hangingAmong(candidates []HangingTransaction, idOf map[int64]string, described map[string]*TransactionDescription) []HangingTransaction {
	out := []HangingTransaction{}
	for _, h := range candidates {
		id, known := idOf[h.ProducerID]
		d := described[id]
		if !known || d == nil || !slices.Contains(d.Partitions, h.TopicPartition) {
			out = append(out, h)
		}
	}
	return out
}

// partitionsToSearch is f's partitions: the one named, a topic's, or
// every partition (internal topics included) with a replica on f.Broker.
func (c *Client) partitionsToSearch(ctx context.Context, f HangingFilter) ([]TopicPartition, error) {
	if f.Topic != "" && f.Partition >= 0 {
		return []TopicPartition{{Topic: f.Topic, Partition: f.Partition}}, nil
	}
	topics := []string{f.Topic}
	if f.Topic == "" {
		var err error
		if topics, err = c.ListTopics(ctx, true); err != nil {
			return nil, err
		}
	}
	var out []TopicPartition
	for batch := range slices.Chunk(topics, 500) {
		ds, err := c.DescribeTopics(ctx, batch...)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if d.Err != nil {
				return nil, d.Err
			}
			for _, p := range d.Partitions {
				if f.Broker == AnyBroker || slices.Contains(p.Replicas, f.Broker) {
					out = append(out, TopicPartition{Topic: d.Name, Partition: p.Partition})
				}
			}
		}
	}
	return out, nil
}
