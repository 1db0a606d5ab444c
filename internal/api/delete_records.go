package api

// DeleteRecords (key 21), v0–v2: moves each partition's log start offset
// up to the offset asked (-1: the high watermark), as Kafka does. The
// leader deletes first (reads below the new start get OFFSET_OUT_OF_RANGE,
// ListOffsets earliest answers it, whole segments below it go, and it is
// persisted in the partition's log-start-offset-checkpoint), then the
// answer waits, up to timeout_ms, until every live follower has moved its
// own — the low watermark the answer reports (replica.AwaitLowWatermarks;
// REQUEST_TIMED_OUT with -1 when they do not in time). Per partition, as
// Kafka: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED),
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER off the leader,
// INVALID_TOPIC_EXCEPTION for the internal topics, POLICY_VIOLATION for a
// topic whose cleanup.policy lacks delete, OFFSET_OUT_OF_RANGE for an
// offset past the high watermark or below -1.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	snap := s.Store.Snapshot()
	var waits []replica.DeleteWait
	var waitAt [][2]int // each wait's topic and partition index in resp
	for ti, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		authErr := s.topicAllowed(c, auth.OpDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			err := authErr
			if err == nil {
				var w replica.DeleteWait
				if w, err = s.deleteRecords(snap, rt.Topic, rp.Partition, rp.Offset); err == nil {
					waits = append(waits, w)
					waitAt = append(waitAt, [2]int{ti, len(st.Partitions)})
				}
			}
			if err != nil {
				sp.ErrorCode, _ = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		r.Parked += s.Logs.AwaitLowWatermarks(ctx, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
		for i, w := range waits {
			sp := &resp.Topics[waitAt[i][0]].Partitions[waitAt[i][1]]
			sp.LowWatermark = w.LowWatermark
			if w.Err != nil {
				sp.ErrorCode, _ = errorCode(w.Err)
			}
		}
	}
	return resp, nil
}

// deleteRecords deletes one partition's records below offset on its
// leader (this broker).
func (s *Server) deleteRecords(snap *meta.Snapshot, topic string, partition int32, offset int64) (replica.DeleteWait, error) {
	if internalTopic(topic) {
		return replica.DeleteWait{}, newError(kerr.InvalidTopicException, "Cannot delete records of internal topic "+topic)
	}
	pt, err := s.resolve(snap, partitionRef{name: topic, partition: partition})
	if err != nil {
		return replica.DeleteWait{}, err
	}
	policy := strings.Split(config.TopicValue("cleanup.policy", s.Configs.Layers(snap, topic)), ",")
	if !slices.ContainsFunc(policy, func(p string) bool { return strings.TrimSpace(p) == "delete" }) {
		return replica.DeleteWait{}, newError(kerr.PolicyViolation, "Records of partition "+topic+"-"+itoa32(partition)+" can not be deleted due to the configured policy")
	}
	required, err := pt.DeleteRecords(offset)
	if err != nil {
		return replica.DeleteWait{}, err
	}
	return replica.DeleteWait{Partition: pt, Offset: required}, nil
}
