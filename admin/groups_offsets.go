package admin

// Group offsets: OffsetFetch (9) for what a group committed, ListOffsets
// (2) for where the logs start and end (and offsets by time), OffsetCommit
// (8) to change commits from outside the group, OffsetDelete (47).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special timestamps of ListOffsets.
const (
	OffsetLatest   int64 = -1 // the log end offset
	OffsetEarliest int64 = -2 // the log start offset
)

// CommittedOffset is one offset a group committed.
type CommittedOffset struct {
	Offset int64 `json:"offset"`
	// LeaderEpoch is the epoch the consumer saw (KIP-320), -1 if unknown.
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

// CommittedOffsets fetches every offset a group committed. A group that
// does not exist has none (Kafka answers an empty list, not an error).
func (c *Client) CommittedOffsets(ctx context.Context, group string) (map[TopicPartition]CommittedOffset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rg.Topics = nil // every partition the group committed
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.OffsetFetchResponse) []int16 {
		codes := []int16{r.ErrorCode}
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
		return codes
	})
	if err != nil {
		return nil, err
	}
	out := map[TopicPartition]CommittedOffset{}
	for _, g := range resp.Groups {
		if g.Group != group {
			continue
		}
		if err := codeError("group "+group, g.ErrorCode, nil); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if err := codeError("partition "+tp.String(), p.ErrorCode, nil); err != nil {
					return nil, err
				}
				if p.Offset < 0 {
					continue // nothing committed
				}
				co := CommittedOffset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if p.Metadata != nil {
					co.Metadata = *p.Metadata
				}
				out[tp] = co
			}
		}
	}
	return out, nil
}

// ListedOffset is one partition's answer to ListOffsets.
type ListedOffset struct {
	// Offset is -1 when the broker found no record at or after the
	// timestamp asked.
	Offset int64
	Err    error
}

// ListOffsets asks the partitions' leaders for the offset at timestamp
// (milliseconds since the epoch, or OffsetEarliest / OffsetLatest).
func (c *Client) ListOffsets(ctx context.Context, partitions []TopicPartition, timestamp int64) (map[TopicPartition]ListedOffset, error) {
	out := make(map[TopicPartition]ListedOffset, len(partitions))
	if len(partitions) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, tp := range partitions {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.Partition, timestamp, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := request[*kmsg.ListOffsetsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
			out[tp] = ListedOffset{Offset: p.Offset, Err: codeError("partition "+tp.String(), p.ErrorCode, nil)}
		}
	}
	for _, tp := range partitions {
		if _, ok := out[tp]; !ok {
			out[tp] = ListedOffset{Offset: -1, Err: clientError("partition "+tp.String(), "the broker did not answer for the partition")}
		}
	}
	return out, nil
}

// PartitionLag is one row of a group's offsets: a partition the group
// consumes or committed, where it is and how far behind the log end.
type PartitionLag struct {
	TopicPartition
	// CommittedOffset is -1 when the group committed nothing here.
	CommittedOffset int64 `json:"committed_offset"`
	LeaderEpoch     int32 `json:"leader_epoch"`
	// LogEndOffset is -1 when the leader could not be asked.
	LogEndOffset int64 `json:"log_end_offset"`
	// Lag is LogEndOffset - CommittedOffset, -1 when either is unknown.
	Lag int64 `json:"lag"`
	// The member consuming the partition; empty when none is.
	MemberID string `json:"member_id"`
	Host     string `json:"host"`
	ClientID string `json:"client_id"`
}

// GroupLag is a group with the offsets of every partition it consumes or
// committed.
type GroupLag struct {
	GroupDescription
	Partitions []PartitionLag `json:"partitions"`
}

// DescribeGroupLag describes a group with its committed offsets and lag, in
// the rows Kafka's consumer group tool prints: the partitions of each
// member (members with the most partitions first), then partitions with a
// commit but no member.
func (c *Client) DescribeGroupLag(ctx context.Context, group string) (GroupLag, error) {
	ds, err := c.DescribeGroups(ctx, group)
	if err != nil {
		return GroupLag{}, err
	}
	gl := GroupLag{GroupDescription: ds[0], Partitions: []PartitionLag{}}
	if gl.Err != nil {
		return gl, nil
	}
	committed, err := c.CommittedOffsets(ctx, group)
	if err != nil {
		gl.Err = err
		return gl, nil
	}
	members := slices.Clone(gl.Members)
	slices.SortStableFunc(members, func(a, b GroupMember) int { return len(b.Assignment) - len(a.Assignment) })
	assigned := map[TopicPartition]bool{}
	for _, m := range members {
		for _, tp := range m.Assignment {
			assigned[tp] = true
			gl.Partitions = append(gl.Partitions, PartitionLag{TopicPartition: tp, MemberID: m.MemberID, Host: m.Host, ClientID: m.ClientID})
		}
	}
	var unassigned []TopicPartition
	for tp := range committed {
		if !assigned[tp] {
			unassigned = append(unassigned, tp)
		}
	}
	SortTopicPartitions(unassigned)
	for _, tp := range unassigned {
		gl.Partitions = append(gl.Partitions, PartitionLag{TopicPartition: tp})
	}
	all := make([]TopicPartition, len(gl.Partitions))
	for i, p := range gl.Partitions {
		all[i] = p.TopicPartition
	}
	ends, err := c.ListOffsets(ctx, all, OffsetLatest)
	if err != nil {
		return GroupLag{}, err
	}
	for i := range gl.Partitions {
		p := &gl.Partitions[i]
		p.CommittedOffset, p.LeaderEpoch, p.LogEndOffset, p.Lag = -1, -1, -1, -1
		if co, ok := committed[p.TopicPartition]; ok {
			p.CommittedOffset, p.LeaderEpoch = co.Offset, co.LeaderEpoch
		}
		if end := ends[p.TopicPartition]; end.Err == nil {
			p.LogEndOffset = end.Offset
		}
		if p.CommittedOffset >= 0 && p.LogEndOffset >= 0 {
			p.Lag = p.LogEndOffset - p.CommittedOffset
		}
	}
	return gl, nil
}

// PartitionResult is the outcome for one partition.
type PartitionResult struct {
	TopicPartition
	Err error
}

// PartitionResults holds one result per partition, sorted.
type PartitionResults []PartitionResult

// All joins the errors of the partitions that failed; nil when all
// succeeded.
func (rs PartitionResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// CommitGroupOffsets commits offsets for a group from outside it (as
// Kafka's alterConsumerGroupOffsets: no generation, no member id), which
// the coordinator accepts only while the group has no members.
func (c *Client) CommitGroupOffsets(ctx context.Context, group string, offsets map[TopicPartition]int64) (PartitionResults, error) {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	SortTopicPartitions(tps)
	rs := make(PartitionResults, len(tps))
	for i, tp := range tps {
		rs[i].TopicPartition = tp
	}
	if len(tps) == 0 {
		return rs, nil
	}
	// OffsetCommit v10 names topics by id (KIP-848's brokers), older
	// versions by name: send both.
	ids, err := c.topicIDs(ctx, tps)
	if err != nil {
		return nil, err
	}
	names := map[[16]byte]string{}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = tp.Topic, ids[tp.Topic]
			names[rt.TopicID] = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, offsets[tp], -1
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.OffsetCommitResponse) (codes []int16) {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
		return codes
	})
	if err != nil {
		return nil, err
	}
	rs.setFrom(func(set func(TopicPartition, int16)) {
		for _, t := range resp.Topics {
			topic := t.Topic
			if topic == "" {
				topic = names[t.TopicID]
			}
			for _, p := range t.Partitions {
				set(TopicPartition{Topic: topic, Partition: p.Partition}, p.ErrorCode)
			}
		}
	})
	return rs, nil
}

// topicIDs looks up the ids of the partitions' topics (zero where the
// broker has none).
func (c *Client) topicIDs(ctx context.Context, tps []TopicPartition) (map[string][16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	req.Topics = []kmsg.MetadataRequestTopic{}
	seen := map[string]bool{}
	for _, tp := range tps {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp.Topic)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := request[*kmsg.MetadataResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	ids := map[string][16]byte{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			ids[*t.Topic] = t.TopicID
		}
	}
	return ids, nil
}

// setFrom records the response's code of each partition; a partition the
// response leaves out failed (the broker did not take it).
func (rs PartitionResults) setFrom(each func(set func(TopicPartition, int16))) {
	for i := range rs {
		rs[i].Err = clientError("partition "+rs[i].TopicPartition.String(), "the broker did not answer for the partition")
	}
	each(func(tp TopicPartition, code int16) {
		for i := range rs {
			if rs[i].TopicPartition == tp {
				rs[i].Err = codeError("partition "+tp.String(), code, nil)
			}
		}
	})
}

// DeleteGroupOffsets deletes a group's committed offsets of partitions
// (KIP-496). The returned error is the group's (GROUP_ID_NOT_FOUND,
// NON_EMPTY_GROUP…); partitions carry their own (GROUP_SUBSCRIBED_TO_TOPIC
// when members still consume the topic).
func (c *Client) DeleteGroupOffsets(ctx context.Context, group string, partitions []TopicPartition) (PartitionResults, error) {
	tps := slices.Clone(partitions)
	SortTopicPartitions(tps)
	tps = slices.Compact(tps)
	rs := make(PartitionResults, len(tps))
	for i, tp := range tps {
		rs[i].TopicPartition = tp
	}
	if len(tps) == 0 {
		return rs, nil
	}
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = tp.Partition
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.OffsetDeleteResponse) []int16 { return []int16{r.ErrorCode} })
	if err != nil {
		return nil, err
	}
	if err := codeError("group "+group, resp.ErrorCode, nil); err != nil {
		return rs, err
	}
	rs.setFrom(func(set func(TopicPartition, int16)) {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				set(TopicPartition{Topic: t.Topic, Partition: p.Partition}, p.ErrorCode)
			}
		}
	})
	return rs, nil
}

// TopicPartitions lists every partition of the topics; a topic that does
// not exist is an error (UNKNOWN_TOPIC_OR_PARTITION).
func (c *Client) TopicPartitions(ctx context.Context, topics ...string) ([]TopicPartition, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	ds, err := c.DescribeTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var out []TopicPartition
	for _, d := range ds {
		if d.Err != nil {
			return nil, d.Err
		}
		for _, p := range d.Partitions {
			out = append(out, TopicPartition{Topic: d.Name, Partition: p.Partition})
		}
	}
	SortTopicPartitions(out)
	return out, nil
}
