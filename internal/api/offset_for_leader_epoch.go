package api

// OffsetForLeaderEpoch (key 23): where a leader epoch's records end in the
// leader's log (KIP-101). A follower asks after a leader change, to
// truncate what the new leader does not have; a consumer asks to check its
// position after one (KIP-320). Versions 2-4, as Kafka 4 serves.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	snap := s.Store.Snapshot()
	// As Kafka: CLUSTER_ACTION (a follower's) allows every topic, else
	// each topic needs DESCRIBE, whoever asks.
	clusterAction := s.followerFetchAllowed(c) == nil
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		var authErr error
		if !clusterAction {
			authErr = s.topicAllowed(c, auth.OpDescribe, rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			err := authErr
			if err == nil {
				var pt replica.Partition
				if pt, err = s.resolve(snap, partitionRef{name: rt.Topic, partition: rp.Partition}); err == nil {
					sp.LeaderEpoch, sp.EndOffset, err = pt.EndOffsetForEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
				}
			}
			if err != nil {
				sp.LeaderEpoch, sp.EndOffset = -1, -1
				sp.ErrorCode, _ = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
