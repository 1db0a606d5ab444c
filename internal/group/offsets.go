package group

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// Commit serves the partitions of an OffsetCommit that passed the
// handler's checks (authorization, known topic and partition). Its answer
// has every partition of req, each with its own error: OffsetCommit has no
// top-level error, so a group-level one is copied onto every partition.
func (c *Coordinator) Commit(ctx context.Context, req *kmsg.OffsetCommitRequest) []kmsg.OffsetCommitResponseTopic {
	resp := c.commit(ctx, req)
	c.counters.countCommit(resp)
	return resp
}

func (c *Coordinator) commit(ctx context.Context, req *kmsg.OffsetCommitRequest) []kmsg.OffsetCommitResponseTopic {
	if req.Group == "" {
		return CommitErrors(req.Topics, kerr.InvalidGroupID.Code)
	}
	resp, _, errc := call(ctx, c, req.Group, func(s *shard, done func([]kmsg.OffsetCommitResponseTopic)) {
		done(s.commit(req))
	})
	if errc != nil {
		return CommitErrors(req.Topics, errc.Code)
	}
	return resp
}

// CommitErrors answers every partition of topics with code.
func CommitErrors(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
	out := make([]kmsg.OffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// validateCommit is Kafka's classic-group commit check. A commit with a
// negative generation and no member is a "simple" commit (admin tools,
// consumers using assign()): allowed into an empty group only. A member's
// commit must come from the current generation, and not while the
// assignment is being handed out (REBALANCE_IN_PROGRESS); commits during
// PreparingRebalance are allowed so consumers can commit as they revoke.
func (s *shard) validateCommit(req *kmsg.OffsetCommitRequest) (*group, *kerr.Error) {
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			if req.Version >= 9 {
				return nil, kerr.GroupIDNotFound
			}
			return nil, kerr.IllegalGeneration
		}
		g = newGroup(req.Group, s.now())
		return g, nil // added to the shard once the commit is written
	}
	if g.consumer != nil {
		if e := g.consumer.validateCommit(req); e != nil {
			return nil, e
		}
		return g, nil
	}
	switch {
	case g.state == Dead:
		return nil, kerr.CoordinatorNotAvailable
	case req.Generation < 0 && g.state == Empty:
		return g, nil
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		if e := g.validateGeneration(req.MemberID, req.InstanceID, req.Generation); e != nil {
			return nil, e
		}
	default:
		return nil, kerr.UnknownMemberID
	}
	if g.state == CompletingRebalance {
		return nil, kerr.RebalanceInProgress
	}
	return g, nil
}

func (s *shard) commit(req *kmsg.OffsetCommitRequest) []kmsg.OffsetCommitResponseTopic {
	g, e := s.validateCommit(req)
	if e != nil {
		return CommitErrors(req.Topics, e.Code)
	}
	now := s.now().UnixMilli()
	// Kafka's v2-v4 retention time gives the offsets an explicit expiry;
	// v1 carries a per-partition commit timestamp instead.
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now + req.RetentionTimeMillis
	}
	out := CommitErrors(req.Topics, 0)
	var parts []commitPart
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			c := committed{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTime: now, expireTime: expire}
			if req.Version < 6 {
				c.leaderEpoch = -1
			}
			if req.Version == 1 && p.Timestamp != -1 {
				c.commitTime = p.Timestamp
			}
			parts = append(parts, commitPart{t.Topic, p.Partition, p.Metadata, c, &out[i].Partitions[j].ErrorCode})
		}
	}
	records, kept := s.offsetRecords(req.Group, parts)
	if len(records) == 0 {
		return out
	}
	if e := s.write(records...); e != nil {
		failParts(kept, e)
		return out
	}
	s.groups[g.id] = g
	for _, p := range kept {
		g.setOffset(p.topic, p.partition, p.c)
	}
	return out
}

// validateGeneration is the check of a member's commit to a classic
// group: a member of the current generation.
func (g *group) validateGeneration(memberID string, instanceID *string, generation int32) *kerr.Error {
	if e := g.validateMember(memberID, instanceID); e != nil {
		return e
	}
	if generation != g.generation {
		return kerr.IllegalGeneration
	}
	return nil
}

// commitPart is one partition of an OffsetCommit or a TxnOffsetCommit:
// the offset it commits, and where its error code goes.
type commitPart struct {
	topic     string
	partition int32
	metadata  *string
	c         committed
	code      *int16
}

// offsetRecords refuses the parts whose metadata exceeds
// offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE) and returns the
// records of the others, and those parts.
func (s *shard) offsetRecords(group string, parts []commitPart) ([]coordinator.Record, []commitPart) {
	var records []coordinator.Record
	var kept []commitPart
	for _, p := range parts {
		if p.metadata != nil {
			p.c.metadata = *p.metadata
		}
		if len(p.c.metadata) > s.cfg.MaxMetadataBytes {
			*p.code = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		records = append(records, offsetRecord(group, p.topic, p.partition, p.c))
		kept = append(kept, p)
	}
	return records, kept
}

// failParts answers e for every part whose write failed.
func failParts(parts []commitPart, e *kerr.Error) {
	for _, p := range parts {
		*p.code = e.Code
	}
}

// FetchTopic is a topic of an OffsetFetch: nil Partitions asks for none.
type FetchTopic struct {
	Topic      string
	Partitions []int32
}

// Fetch answers an OffsetFetch for one group: the offsets of topics, or of
// every topic with commits when topics is nil. A partition without a
// commit gets offset -1, leader epoch -1 and metadata "". The error is the
// group-level one.
func (c *Coordinator) Fetch(ctx context.Context, groupID string, topics []FetchTopic) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	return c.FetchStable(ctx, groupID, topics, false)
}

// FetchStable is Fetch with OffsetFetch v7's RequireStable (KIP-447): set,
// a partition with a transactional commit still pending gets
// UNSTABLE_OFFSET_COMMIT (retriable) instead of its last committed offset.
func (c *Coordinator) FetchStable(ctx context.Context, groupID string, topics []FetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	resp, _, errc := call(ctx, c, groupID, func(s *shard, done func([]kmsg.OffsetFetchResponseGroupTopic)) {
		done(s.fetch(groupID, topics, requireStable))
	})
	if errc != nil {
		return nil, errc.Code
	}
	return resp, 0
}

func (s *shard) fetch(groupID string, topics []FetchTopic, requireStable bool) []kmsg.OffsetFetchResponseGroupTopic {
	g := s.groups[groupID]
	if topics == nil {
		if g == nil {
			return nil
		}
		// Every partition with a commit, and with requireStable those
		// only pending too, so the client learns to wait for them.
		all := map[string]map[int32]bool{}
		if requireStable {
			all = s.pendingTopics(groupID)
		}
		for t, ps := range g.offsets {
			if all[t] == nil {
				all[t] = map[int32]bool{}
			}
			for p := range ps {
				all[t][p] = true
			}
		}
		names := make([]string, 0, len(all))
		for t := range all {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			ft := FetchTopic{Topic: t}
			for p := range all[t] {
				ft.Partitions = append(ft.Partitions, p)
			}
			slices.Sort(ft.Partitions)
			topics = append(topics, ft)
		}
	}
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			if requireStable && s.hasPending(groupID, t.Topic, p) {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if g != nil {
				if c, ok := g.offsets[t.Topic][p]; ok {
					rp.Offset, rp.LeaderEpoch = c.offset, c.leaderEpoch
					meta := c.metadata
					rp.Metadata = &meta
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// DeleteOffsets serves an OffsetDelete for the partitions that passed the
// handler's checks (KIP-496). The error is the group-level one.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, topics []FetchTopic) ([]kmsg.OffsetDeleteResponseTopic, int16) {
	resp, _, errc := call(ctx, c, groupID, func(s *shard, done func(deleteOffsetsResult)) {
		done(s.deleteOffsets(groupID, topics))
	})
	if errc != nil {
		return nil, errc.Code
	}
	return resp.topics, resp.code
}

type deleteOffsetsResult struct {
	topics []kmsg.OffsetDeleteResponseTopic
	code   int16
}

func (s *shard) deleteOffsets(groupID string, topics []FetchTopic) deleteOffsetsResult {
	g := s.groups[groupID]
	if g == nil || g.state == Dead {
		return deleteOffsetsResult{code: kerr.GroupIDNotFound.Code}
	}
	// Only a group whose members' subscriptions the broker can read may
	// lose offsets while it has members: those of topics nobody
	// subscribes to.
	subscribed, known := g.subscribedTopics()
	hasMembers := len(g.members) > 0
	if g.consumer.active() {
		subscribed, known, hasMembers = s.consumerSubscribedTopics(g), true, true
	}
	if hasMembers && !known {
		return deleteOffsetsResult{code: kerr.NonEmptyGroup.Code}
	}
	var out []kmsg.OffsetDeleteResponseTopic
	var records []coordinator.Record
	var gone []FetchTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		del := FetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p
			switch {
			case hasMembers && subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[t.Topic][p]; ok {
					records = append(records, offsetTombstone(groupID, t.Topic, p))
					del.Partitions = append(del.Partitions, p)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		gone = append(gone, del)
		out = append(out, rt)
	}
	if e := s.write(records...); e != nil {
		return deleteOffsetsResult{code: e.Code}
	}
	for _, d := range gone {
		for _, p := range d.Partitions {
			delete(g.offsets[d.Topic], p)
		}
		if len(g.offsets[d.Topic]) == 0 {
			delete(g.offsets, d.Topic)
		}
	}
	return deleteOffsetsResult{topics: out}
}
