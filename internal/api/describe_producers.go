package api

// DescribeProducers (key 61), v0 (KIP-664).
//
// The producers with state in each partition this broker leads: producer
// id and epoch, last sequence, last timestamp, the epoch of the
// coordinator that wrote the producer's last marker, and the start of its
// ongoing transaction (-1 when none), as Kafka's partition leader reports
// them; `kafka-transactions.sh describe-producers` and `find-hanging` read
// it. TOPIC READ is needed per topic (TOPIC_AUTHORIZATION_FAILED for each
// of its partitions otherwise); an unknown partition is
// UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere NOT_LEADER_OR_FOLLOWER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeProducers, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	snap := s.Store.Snapshot()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		authErr := s.topicAllowed(c, auth.OpRead, rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			err := authErr
			var pt replica.Partition
			if err == nil {
				pt, err = s.resolve(snap, partitionRef{name: rt.Topic, partition: p})
			}
			if err == nil {
				err = describeProducers(&pt, &sp)
			}
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(err)
				sp.ActiveProducers = nil
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func describeProducers(pt *replica.Partition, sp *kmsg.DescribeProducersResponseTopicPartition) error {
	producers, err := pt.Producers()
	if err != nil {
		return err
	}
	sp.ActiveProducers = make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(producers))
	for _, p := range producers {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = p.ProducerID, int32(p.ProducerEpoch), p.LastSequence
		ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = p.LastTimestamp, p.CoordinatorEpoch, p.CurrentTxnStartOffset
		sp.ActiveProducers = append(sp.ActiveProducers, ap)
	}
	return nil
}
