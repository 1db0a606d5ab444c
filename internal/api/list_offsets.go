package api

// ListOffsets (key 2), v1–v10.
//
// Finds offsets by time: -2 is the log start (earliest), -1 the high
// watermark (latest; the last stable offset for read_committed), -3 the
// record with the largest timestamp (v7+, KIP-734), -4 the earliest local
// offset (v8+, the log start without tiered storage), -5 the latest tiered
// offset (v9+; none without tiered storage). A timestamp ≥ 0 gives the
// first offset whose timestamp is at least it, or -1 when there is none. v0
// (old-style offset lists) was removed in Kafka 4 and is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ListOffsets, 1, 10, handleListOffsets) }

func handleListOffsets(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	snap := s.Store.Snapshot()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			var pt replica.Partition
			err := s.topicAllowed(c, auth.OpDescribe, rt.Topic)
			if err == nil {
				pt, err = s.resolve(snap, partitionRef{name: rt.Topic, partition: rp.Partition})
			}
			if err == nil {
				err = pt.CheckLeaderEpoch(rp.CurrentLeaderEpoch)
			}
			if err == nil && req.ReplicaID >= 0 && req.ReplicaID != -2 {
				err = s.Logs.FollowerListOffsets()
			}
			if err == nil {
				sp.LeaderEpoch = pt.LeaderEpoch
				sp.Offset, sp.Timestamp, err = pt.ListOffset(rp.Timestamp, req.IsolationLevel == 1) // 1: read_committed
			}
			if err != nil {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				sp.ErrorCode, _ = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
