package api

// Produce (key 0), v3–v13.
//
// Appends one v2 record batch per partition (Kafka 4 dropped v0–v2 and the
// old message formats). The batch is validated and stored as produced, with
// offsets assigned here; idempotent producers' sequences are checked per
// partition and a retried batch is answered with its original offsets
// without being written again. acks may be 0 (no response; an error closes
// the connection so the client notices), 1 (the leader's append) or -1
// (every in-sync replica, at least min.insync.replicas of them:
// replica.Partition.AppendAsLeader). v13 names topics by id.
// Transactional batches need the request's transactional id, with WRITE on
// it (else the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
// Kafka answers), and, when the broker wires KIP-890 part 1
// (Server.VerifyTxnPartition), the coordinator's word that the partition is
// in the producer's transaction (under TV2, Produce v12+, the coordinator
// adds the partition: KIP-890 part 2); the log checks their epoch, sequence and
// transactional state (internal/storage). Control batches are the broker's
// own (INVALID_RECORD), and so is any batch for `__consumer_offsets` or
// `__transaction_state`, which only the group and transaction coordinators
// write (INVALID_TOPIC_EXCEPTION, as Kafka).

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

func init() { register(kmsg.Produce, 3, 13, handleProduce) }

func handleProduce(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	snap := s.Store.Snapshot()
	now := time.Now()
	failed := false
	targets := s.produceTargets(c, snap, req)
	s.verifyTxnTargets(ctx, req, targets)
	var waits []replica.CommitWait // acks=all on partitions with followers
	var waitAt [][2]int            // each wait's topic and partition index in resp
	next := 0
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			target := &targets[next]
			next++
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			err := target.err
			if err == nil {
				var w *replica.CommitWait
				if w, err = s.produceOne(ctx, req, snap, target, now, &sp); w != nil {
					waits, waitAt = append(waits, *w), append(waitAt, [2]int{ti, len(st.Partitions)})
				}
			}
			if err != nil {
				failed = true
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
				sp.ErrorCode, sp.ErrorMessage = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		r.Parked += s.Logs.AwaitCommitted(ctx, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
		for i, w := range waits {
			if w.Err != nil {
				sp := &resp.Topics[waitAt[i][0]].Partitions[waitAt[i][1]]
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
				sp.ErrorCode, sp.ErrorMessage = errorCode(w.Err)
			}
		}
	}
	// The request's bytes count against the producer's byte-rate quota.
	throttle := s.Quotas.RecordProduce(quotaUser(c), r.ClientID, r.Size)
	if req.Acks == 0 {
		if err := replica.AcksZeroOutcome(failed); err != nil {
			return nil, err
		}
		c.Mute(throttle) // no response to carry the throttle
		return nil, nil
	}
	addThrottle(resp, throttle)
	return resp, nil
}

// internalTopicProduce is Kafka's refusal of a client's records for an
// internal topic: only the group and transaction coordinators write them.
func internalTopicProduce(topic string) error {
	return newError(kerr.InvalidTopicException, "Cannot append to internal topic "+topic)
}

// produceTarget is one partition of a Produce on its way to the log, in
// request order.
type produceTarget struct {
	pt      replica.Partition
	records []byte
	// err refuses the partition before its append.
	err error
	// guard is the verification guard (KIP-890) the append carries:
	// storage.NoGuard when the coordinator was not asked.
	guard storage.VerificationGuard
}

// produceTargets checks acks, authorizes and resolves every partition of
// req before any is appended, so that the transactional ones can go to
// the coordinator together (verifyTxnTargets).
func (s *Server) produceTargets(c *wire.Conn, snap *meta.Snapshot, req *kmsg.ProduceRequest) []produceTarget {
	acksErr := replica.CheckAcks(req.Acks)
	// Kafka refuses transactional records without a transactional id as it
	// refuses an unauthorized one, authorizer or not.
	transactionalOK := s.produceTransactionalAllowed(c, req) && (req.TransactionID != nil || !hasTransactionalBatch(req))
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	targets := make([]produceTarget, 0, n)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			t := produceTarget{records: rp.Records}
			ref := partitionRef{name: rt.Topic, id: rt.TopicID, byID: req.Version >= 13, partition: rp.Partition}
			switch {
			case acksErr != nil:
				t.err = acksErr
			default:
				if t.err = s.produceAllowed(c, snap, ref, transactionalOK); t.err != nil {
					break
				}
				if t.pt, t.err = s.resolve(snap, ref); t.err == nil && internalTopic(t.pt.Topic) {
					t.err = internalTopicProduce(t.pt.Topic)
				}
			}
			targets = append(targets, t)
		}
	}
	return targets
}

// produceOne appends one partition's records, verified by
// verifyTxnTargets. With acks=all on a partition with followers it
// returns the wait for the in-sync replicas, which the handler runs once
// every partition is appended.
func (s *Server) produceOne(ctx context.Context, req *kmsg.ProduceRequest, snap *meta.Snapshot, t *produceTarget, now time.Time, sp *kmsg.ProduceResponseTopicPartition) (*replica.CommitWait, error) {
	pt := t.pt
	res, err := s.producer.Append(snap, pt, req.Acks, t.records, now, t.guard)
	if errors.Is(err, storage.ErrVerificationOvertaken) {
		// The coordinator held the verification until the last
		// transaction's markers were written (txn.settleWait), and one of
		// them, here, overtook the guard: asked again with a fresh guard,
		// it answers at once for the transaction open now. Kafka answers
		// CONCURRENT_TRANSACTIONS instead and the client retries.
		retry := []produceTarget{{pt: pt, records: t.records}}
		if s.verifyTxnTargets(ctx, req, retry); retry[0].err != nil {
			return nil, retry[0].err
		}
		res, err = s.producer.Append(snap, pt, req.Acks, t.records, now, retry[0].guard)
	}
	if err != nil {
		return nil, err
	}
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
	if req.Acks == -1 && pt.Replicated() {
		return &replica.CommitWait{Partition: pt, LastOffset: res.LastOffset, MinInsync: s.Logs.MinInsyncReplicas(snap, pt.Topic)}, nil
	}
	return nil, nil
}

// errManyTransactionalProducers is Kafka's refusal of a Produce whose
// transactional batches come from more than one producer: the request is
// verified for one producer, so every partition gets it.
var errManyTransactionalProducers = newError(kerr.InvalidProducerIDMapping, "Transactional records contained more than one producer ID")

// verifyTxnTargets asks the transaction coordinator, through the KIP-890
// hook, whether the partitions of req's transactional batches are in their
// producer's transaction; under TV2 (transaction.version 2 finalized,
// Produce v12+) the coordinator adds them instead, so clients send no
// AddPartitionsToTxn. Every partition's verification guard is taken
// first and kept for its append, so that a marker written while the
// coordinator answers makes the append fail rather than open a
// transaction no marker will end; a producer whose transaction is already
// open in a partition needs no question there (Kafka's
// VerificationGuard.SENTINEL). The partitions left go to the coordinator
// in one call, as Kafka's AddPartitionsToTxnManager sends them: under TV2
// one `__transaction_state` write adds them all. The refused get the
// coordinator's error in target.err.
func (s *Server) verifyTxnTargets(ctx context.Context, req *kmsg.ProduceRequest, targets []produceTarget) {
	if req.TransactionID == nil {
		return
	}
	var ask []int // indexes into targets
	var pid int64
	var epoch int16
	for i := range targets {
		t := &targets[i]
		if t.err != nil {
			continue
		}
		h, ok := record.ParseHeader(t.records)
		if !ok || !h.IsTransactional() || h.IsControl() {
			continue // the log refuses what is not a transactional data batch
		}
		if len(ask) > 0 && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
			for j := range targets {
				targets[j].err, targets[j].guard = errManyTransactionalProducers, storage.NoGuard
			}
			return
		}
		pid, epoch = h.ProducerID, h.ProducerEpoch
		ask = append(ask, i)
	}
	if s.VerifyTxnPartitions == nil || len(ask) == 0 {
		return
	}
	var partitions []txn.TopicPartition
	var asked []int // indexes into targets, one per partition
	for _, i := range ask {
		t := &targets[i]
		if t.guard = t.pt.StartTxnVerification(pid, epoch); t.guard != storage.NoGuard {
			partitions, asked = append(partitions, txn.TopicPartition{Topic: t.pt.Topic, Partition: t.pt.Key.Partition}), append(asked, i)
		}
	}
	if len(partitions) == 0 {
		return
	}
	errs := s.askTxnCoordinator(ctx, req, pid, epoch, partitions)
	for j, i := range asked {
		if j >= len(errs) {
			// A hook that answered fewer partitions than asked: the rest
			// are not verified.
			targets[i].err = kerr.UnknownServerError
			continue
		}
		targets[i].err = errs[j]
	}
}

// askTxnCoordinator is verifyTxnTargets' call of the hook: one per
// request, with an error per partition, rewritten for the producer as
// Kafka's ReplicaManager rewrites them (verificationError).
func (s *Server) askTxnCoordinator(ctx context.Context, req *kmsg.ProduceRequest, pid int64, epoch int16, partitions []txn.TopicPartition) []error {
	add := req.Version >= 12 && s.transactionVersion >= 2
	errs := s.VerifyTxnPartitions(ctx, *req.TransactionID, pid, epoch, partitions, add)
	for i, err := range errs {
		if err != nil {
			errs[i] = verificationError(err, req.Version, add)
		}
	}
	return errs
}

// verificationUnderlying are the coordinator errors a Produce answers as
// NOT_ENOUGH_REPLICAS, as Kafka's ReplicaManager does: they are retriable,
// but older producers do not retry them on a Produce, and
// NOT_ENOUGH_REPLICAS makes every producer retry without a metadata
// refresh.
var verificationUnderlying = []*kerr.Error{
	kerr.NetworkException,
	kerr.CoordinatorLoadInProgress,
	kerr.CoordinatorNotAvailable,
	kerr.NotCoordinator,
}

// verificationError is the error a producer gets for a partition whose
// verification failed with err (Kafka's AddPartitionsToTxnManager and
// ReplicaManager): TRANSACTION_ABORTABLE reaches Produce v10 and older
// as INVALID_TXN_STATE, which they know; the coordinator errors above,
// and CONCURRENT_TRANSACTIONS unless the coordinator was adding the
// partition (under TV2 it is common during a commit, and TV2 clients
// retry it), become NOT_ENOUGH_REPLICAS naming the underlying error; an
// INVALID_TXN_STATE says the partition was not added.
func verificationError(err error, version int16, add bool) error {
	if version < 11 && errors.Is(err, kerr.TransactionAbortable) {
		err = kerr.InvalidTxnState
	}
	underlying := slices.IndexFunc(verificationUnderlying, func(k *kerr.Error) bool { return errors.Is(err, k) }) >= 0 ||
		!add && errors.Is(err, kerr.ConcurrentTransactions)
	var ke *kerr.Error
	switch {
	case underlying && errors.As(err, &ke):
		return newError(kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: "+ke.Message)
	case errors.Is(err, kerr.InvalidTxnState):
		return newError(kerr.InvalidTxnState, "Partition was not added to the transaction")
	}
	return err
}
