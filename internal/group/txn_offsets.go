package group

// Transactional offset commits (TxnOffsetCommit, KIP-98/KIP-447). The
// offsets are written to the group's `__consumer_offsets` partition in a
// transactional batch of the producer, and stay pending until the
// transaction coordinator's marker settles them: a commit marker makes them
// the group's committed offsets, an abort marker drops them (Kafka's
// OffsetMetadataManager.replayEndTransactionMarker). Replay rebuilds the same
// from the batches and control records in the log.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// pendingKey is one partition's offset of one group.
type pendingKey struct {
	group, topic string
	partition    int32
}

// pendingOffsets are one producer's transactional commits awaiting their
// marker, the latest per partition.
type pendingOffsets map[pendingKey]committed

// TxnCommit serves a TxnOffsetCommit that passed the handler's checks.
// Every partition of the request gets its own error (there is no top-level
// one).
func (c *Coordinator) TxnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) []kmsg.TxnOffsetCommitResponseTopic {
	if req.Group == "" {
		return TxnCommitErrors(req.Topics, kerr.InvalidGroupID.Code)
	}
	resp, _, errc := call(ctx, c, req.Group, func(s *shard, done func([]kmsg.TxnOffsetCommitResponseTopic)) {
		done(s.txnCommit(req))
	})
	if errc != nil {
		return TxnCommitErrors(req.Topics, errc.Code)
	}
	return resp
}

// TxnCommitErrors answers every partition of topics with code.
func TxnCommitErrors(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) []kmsg.TxnOffsetCommitResponseTopic {
	out := make([]kmsg.TxnOffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// validateTxnCommit is Kafka's check of a transactional commit: the
// classic-group commit check, except that a commit without member and
// generation (v0-v2 have neither) is accepted into an active group, and
// there is no REBALANCE_IN_PROGRESS; a consumer group (KIP-848) checks the
// member and its epoch as for OffsetCommit.
func (s *shard) validateTxnCommit(req *kmsg.TxnOffsetCommitRequest) (*group, *kerr.Error) {
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return nil, kerr.IllegalGeneration
		}
		return newGroup(req.Group, s.now()), nil
	}
	if g.consumer != nil {
		if e := g.consumer.validateTxnCommit(req); e != nil {
			return nil, e
		}
		return g, nil
	}
	switch {
	case g.state == Dead:
		return nil, kerr.CoordinatorNotAvailable
	case req.Generation < 0 && g.state == Empty:
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		if e := g.validateGeneration(req.MemberID, req.InstanceID, req.Generation); e != nil {
			return nil, e
		}
	}
	return g, nil
}

func (s *shard) txnCommit(req *kmsg.TxnOffsetCommitRequest) []kmsg.TxnOffsetCommitResponseTopic {
	g, e := s.validateTxnCommit(req)
	if e != nil {
		return TxnCommitErrors(req.Topics, e.Code)
	}
	now := s.now().UnixMilli()
	out := TxnCommitErrors(req.Topics, 0)
	var parts []commitPart
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			c := committed{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTime: now, expireTime: -1}
			if req.Version < 2 {
				c.leaderEpoch = -1
			}
			parts = append(parts, commitPart{t.Topic, p.Partition, p.Metadata, c, &out[i].Partitions[j].ErrorCode})
		}
	}
	records, kept := s.offsetRecords(req.Group, parts)
	if len(records) == 0 {
		return out
	}
	if e := s.writeTransactional(req.ProducerID, req.ProducerEpoch, records); e != nil {
		failParts(kept, e)
		return out
	}
	if s.groups[g.id] == nil {
		s.groups[g.id] = g
	}
	for _, p := range kept {
		s.addPending(req.ProducerID, pendingKey{req.Group, p.topic, p.partition}, p.c)
	}
	return out
}

func (s *shard) writeTransactional(producerID int64, epoch int16, records []coordinator.Record) *kerr.Error {
	if err := s.rt.WriteTransactional(producerID, epoch, records); err != nil {
		s.rt.Logger().Warn("writing transactional offsets", "partition", s.rt.Partition, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

func (s *shard) addPending(producerID int64, k pendingKey, c committed) {
	if s.pendingTxn == nil {
		s.pendingTxn = map[int64]pendingOffsets{}
	}
	p := s.pendingTxn[producerID]
	if p == nil {
		p = pendingOffsets{}
		s.pendingTxn[producerID] = p
	}
	p[k] = c
}

// CompleteTransaction writes the commit or abort marker of producer's
// transaction to `__consumer_offsets` partition and applies it: the
// transaction's pending offsets become committed, or are dropped. It is
// the marker writer of the offsets partitions.
func (c *Coordinator) CompleteTransaction(ctx context.Context, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	rs := c.rt.Shard(partition)
	switch {
	case rs == nil:
		return kerr.NotCoordinator
	case rs.Failed():
		return kerr.CoordinatorNotAvailable
	case !rs.Loaded():
		return kerr.CoordinatorLoadInProgress
	}
	err, _, errc := runOn(ctx, rs, func(s *shard, done func(error)) {
		if err := s.rt.WriteMarker(producerID, epoch, commit, coordinatorEpoch); err != nil {
			done(fmt.Errorf("writing a transaction marker to %s partition %d: %w", Topic, partition, err))
			return
		}
		s.applyMarker(producerID, commit)
		done(nil)
	})
	if errc != nil {
		return errc
	}
	return err
}

// applyMarker settles producer's pending offsets.
func (s *shard) applyMarker(producerID int64, commit bool) {
	p := s.pendingTxn[producerID]
	delete(s.pendingTxn, producerID)
	if !commit {
		return
	}
	for k, c := range p {
		g := s.groups[k.group]
		if g == nil {
			g = newGroup(k.group, s.now())
			s.groups[k.group] = g
		}
		g.setOffset(k.topic, k.partition, c)
	}
}

// hasPending reports whether some open transaction commits an offset of
// group's partition: OffsetFetch with RequireStable then answers
// UNSTABLE_OFFSET_COMMIT.
func (s *shard) hasPending(group, topic string, partition int32) bool {
	k := pendingKey{group, topic, partition}
	for _, p := range s.pendingTxn {
		if _, ok := p[k]; ok {
			return true
		}
	}
	return false
}

// hasPendingGroup reports whether an open transaction commits offsets of
// group: it is not deleted meanwhile.
func (s *shard) hasPendingGroup(group string) bool {
	for _, p := range s.pendingTxn {
		for k := range p {
			if k.group == group {
				return true
			}
		}
	}
	return false
}

// pendingTopics lists the topics with pending offsets of group, so that an
// all-topics OffsetFetch names them too.
func (s *shard) pendingTopics(group string) map[string]map[int32]bool {
	out := map[string]map[int32]bool{}
	for _, p := range s.pendingTxn {
		for k := range p {
			if k.group != group {
				continue
			}
			if out[k.topic] == nil {
				out[k.topic] = map[int32]bool{}
			}
			out[k.topic][k.partition] = true
		}
	}
	return out
}

// replayTransactional applies a record of a transactional batch or a
// control record read back from the log.
func (s *shard) replayTransactional(r coordinator.Record) error {
	if r.Batch.Control {
		var k kmsg.ControlRecordKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("group: control record key: %w", err)
		}
		switch k.Type {
		case kmsg.ControlRecordKeyTypeCommit:
			s.applyMarker(r.Batch.ProducerID, true)
		case kmsg.ControlRecordKeyTypeAbort:
			s.applyMarker(r.Batch.ProducerID, false)
		}
		return nil
	}
	if len(r.Key) < 2 {
		return fmt.Errorf("group: record key of %d bytes", len(r.Key))
	}
	switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
	case keyOffsetCommitV0, keyOffsetCommit:
	default:
		return nil
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return fmt.Errorf("group: offset commit key: %w", err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil {
		return fmt.Errorf("group: offset commit value: %w", err)
	}
	c := committed{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1}
	if v.Version >= 3 {
		c.leaderEpoch = v.LeaderEpoch
	}
	s.addPending(r.Batch.ProducerID, pendingKey{k.Group, k.Topic, k.Partition}, c)
	return nil
}
