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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
	"kbroker/internal/wire"
)

func init() { register(kmsg.Produce, 3, 13, handleProduce) }

func handleProduce(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksErr := replica.CheckAcks(req.Acks)
	snap := s.Store.Snapshot()
	now := time.Now()
	failed := false
	// Kafka refuses transactional records without a transactional id as it
	// refuses an unauthorized one, authorizer or not.
	transactionalOK := s.produceTransactionalAllowed(c, req) && (req.TransactionID != nil || !hasTransactionalBatch(req))
	var waits []replica.CommitWait // acks=all on partitions with followers
	var waitAt [][2]int            // each wait's topic and partition index in resp
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			var err error
			ref := partitionRef{name: rt.Topic, id: rt.TopicID, byID: req.Version >= 13, partition: rp.Partition}
			if acksErr != nil {
				err = acksErr
			} else if err = s.produceAllowed(c, snap, ref, transactionalOK); err == nil {
				var w *replica.CommitWait
				if w, err = s.produceOne(ctx, req, snap, ref, rp.Records, now, &sp); w != nil {
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

// produceOne verifies and appends one partition's records. With acks=all
// on a partition with followers it returns the wait for the in-sync
// replicas, which the handler runs once every partition is appended.
func (s *Server) produceOne(ctx context.Context, req *kmsg.ProduceRequest, snap *meta.Snapshot, ref partitionRef, records []byte, now time.Time, sp *kmsg.ProduceResponseTopicPartition) (*replica.CommitWait, error) {
	pt, err := s.resolve(snap, ref)
	if err != nil {
		return nil, err
	}
	if internalTopic(pt.Topic) {
		return nil, internalTopicProduce(pt.Topic)
	}
	verifyAndAppend := func() (storage.AppendResult, error) {
		guard, err := s.verifyTxnPartition(ctx, req, pt.Topic, pt.Key.Partition, records, pt.StartTxnVerification)
		if err != nil {
			return storage.AppendResult{}, err
		}
		return s.producer.Append(snap, pt, req.Acks, records, now, guard)
	}
	res, err := verifyAndAppend()
	if errors.Is(err, storage.ErrVerificationOvertaken) {
		// The coordinator held the verification until the last
		// transaction's markers were written (txn.settleWait), and one of
		// them, here, overtook the guard: asked again with a fresh guard,
		// it answers at once for the transaction open now. Kafka answers
		// CONCURRENT_TRANSACTIONS instead and the client retries.
		res, err = verifyAndAppend()
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

// verifyTxnPartition asks the transaction coordinator, through the KIP-890
// hook, whether a transactional batch's partition is in its producer's
// transaction; under TV2 (transaction.version 2 finalized, Produce v12+)
// the coordinator adds it instead, so clients send no AddPartitionsToTxn.
// The partition's verification guard is taken first and returned for the
// append, so that a marker written while the coordinator answers makes the
// append fail rather than open a transaction no marker will end; a
// producer whose transaction is already open in the partition needs no
// question (Kafka's VerificationGuard.SENTINEL). A refusal reaches clients
// of Produce v10 and older as INVALID_TXN_STATE, which they know, instead
// of TRANSACTION_ABORTABLE.
func (s *Server) verifyTxnPartition(ctx context.Context, req *kmsg.ProduceRequest, topic string, partition int32, records []byte, startGuard func(pid int64, epoch int16) storage.VerificationGuard) (storage.VerificationGuard, error) {
	if s.VerifyTxnPartition == nil || req.TransactionID == nil {
		return storage.NoGuard, nil
	}
	h, ok := record.ParseHeader(records)
	if !ok || !h.IsTransactional() || h.IsControl() {
		return storage.NoGuard, nil // the log refuses what is not a transactional data batch
	}
	guard := storage.NoGuard
	if startGuard != nil {
		if guard = startGuard(h.ProducerID, h.ProducerEpoch); guard == storage.NoGuard {
			return guard, nil
		}
	}
	add := req.Version >= 12 && s.transactionVersion >= 2
	err := s.VerifyTxnPartition(ctx, *req.TransactionID, h.ProducerID, h.ProducerEpoch, topic, partition, add)
	if err != nil && req.Version < 11 && errors.Is(err, kerr.TransactionAbortable) {
		return guard, newError(kerr.InvalidTxnState, err.Error())
	}
	return guard, err
}
