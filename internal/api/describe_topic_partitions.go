package api

// DescribeTopicPartitions (key 75), v0 (KIP-966): the partitions of the
// named topics (or of every topic), with leader, leader epoch, replicas,
// ISR, eligible leader replicas, last known ELR and offline replicas, in
// pages. Topics come in name order from the cursor's topic (and, in that
// topic, its partition) on; an answer holds at most
// response_partition_limit partitions, capped by the broker's
// max.request.partition.size.limit (2000), and next_cursor says where the
// next page starts. As Kafka: a topic needs DESCRIBE — a named one the
// principal may not describe is TOPIC_AUTHORIZATION_FAILED (without its
// id, after the others), unauthorized topics are left out of an all-topic
// listing; a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION
// (INVALID_TOPIC_EXCEPTION for an invalid name) and is left out of an
// all-topic listing; a cursor naming a topic not in the request, or a
// negative partition, fails the request with INVALID_REQUEST. Each topic's
// authorized operations are always filled (the request has no flag).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeTopicPartitions, 0, 0, handleDescribeTopicPartitions) }

// defaultPartitionSizeLimit is max.request.partition.size.limit's default.
const defaultPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	snap := s.Store.Snapshot()
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	var names []string
	if all {
		for name := range snap.TopicNames() {
			if name >= cursorTopic {
				names = append(names, name)
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic >= cursorTopic && !slices.Contains(names, rt.Topic) {
				names = append(names, rt.Topic)
			}
		}
		if req.Cursor != nil && !slices.Contains(names, req.Cursor.Topic) {
			return describeTopicPartitionsFailed(req, resp), nil
		}
	}
	if req.Cursor != nil && req.Cursor.Partition < 0 {
		return describeTopicPartitionsFailed(req, resp), nil
	}
	slices.Sort(names)

	live := s.liveBrokerSet(snap)
	remaining := max(min(s.partitionSizeLimit(), req.ResponsePartitionLimit), 1)
	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !s.allowed(c, auth.OpDescribe, auth.ResourceTopic, name) {
			if !all {
				refused = append(refused, describedTopicError(name, kerr.TopicAuthorizationFailed))
			}
			continue
		}
		if remaining == 0 {
			// The next page starts at this topic (which may not exist).
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		t := snap.Topic(name)
		if t == nil {
			if !all {
				code := kerr.UnknownTopicOrPartition
				if validateTopicName(name) != nil {
					code = kerr.InvalidTopicException
				}
				resp.Topics = append(resp.Topics, describedTopicError(name, code))
			}
			continue
		}
		first := int32(0)
		if name == cursorTopic && req.Cursor != nil {
			first = req.Cursor.Partition
		}
		end := min(t.Partitions, first+remaining)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID, rt.IsInternal = kmsg.StringPtr(name), t.ID, internalTopic(name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for p := first; p < end; p++ {
			rt.Partitions = append(rt.Partitions, s.describedPartition(snap, live, t, p))
		}
		rt.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceTopic, name)
		resp.Topics = append(resp.Topics, rt)
		if end < t.Partitions {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
			break
		}
		remaining -= max(end-first, 0)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}

// describedPartition is partition p of t as DescribeTopicPartitions gives
// it: as Metadata does (replica.State), plus the ELR fields.
func (s *Server) describedPartition(snap *meta.Snapshot, live map[int32]*meta.Broker, t *meta.Topic, p int32) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	st := s.Logs.State(snap, t, p, live)
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition, dp.LeaderID, dp.LeaderEpoch = p, st.Leader, st.LeaderEpoch
	dp.Replicas, dp.ISR, dp.OfflineReplicas = orEmpty(st.Replicas), orEmpty(st.ISR), orEmpty(st.OfflineReplicas)
	dp.EligibleLeaderReplicas, dp.LastKnownELR = orEmpty(st.ELR), orEmpty(st.LastKnownELR)
	if st.Leader < 0 {
		dp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return dp
}

func orEmpty(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func describedTopicError(name string, code *kerr.Error) kmsg.DescribeTopicPartitionsResponseTopic {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic, rt.ErrorCode, rt.IsInternal = kmsg.StringPtr(name), code.Code, internalTopic(name)
	rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	return rt
}

// describeTopicPartitionsFailed is Kafka's answer to a request it refuses
// as a whole: every requested topic with the error, nothing else.
func describeTopicPartitionsFailed(req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) *kmsg.DescribeTopicPartitionsResponse {
	for _, rt := range req.Topics {
		et := describedTopicError(rt.Topic, kerr.InvalidRequest)
		et.IsInternal = false
		resp.Topics = append(resp.Topics, et)
	}
	return resp
}

// partitionSizeLimit is max.request.partition.size.limit (read only).
func (s *Server) partitionSizeLimit() int32 {
	if n, err := strconv.Atoi(s.Broker.Props["max.request.partition.size.limit"]); err == nil && n > 0 {
		return int32(n)
	}
	return defaultPartitionSizeLimit
}
