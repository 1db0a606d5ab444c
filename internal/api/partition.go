package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/meta"
	"kbroker/internal/replica"
)

// partitionRef names a partition as a request does: by topic name, or by
// topic id for the versions that use ids (Produce v13+, Fetch v13+).
type partitionRef struct {
	name      string
	id        [16]byte
	byID      bool
	partition int32
}

// resolve finds the topic and the partition this broker leads, or returns
// the error Kafka gives for a missing topic, id or partition, or one led
// elsewhere.
func (s *Server) resolve(snap *meta.Snapshot, ref partitionRef) (replica.Partition, error) {
	t, err := resolveTopic(snap, ref)
	if err != nil {
		return replica.Partition{}, err
	}
	return s.resolveIn(snap, t, ref.partition)
}

// resolveTopic is resolve's topic half, for a request that names many
// partitions of one topic (Fetch) and looks the topic up once.
func resolveTopic(snap *meta.Snapshot, ref partitionRef) (*meta.Topic, error) {
	var t *meta.Topic
	if ref.byID {
		if t = snap.TopicByID(meta.TopicID(ref.id)); t == nil {
			return nil, newError(kerr.UnknownTopicID, "This server does not host this topic ID.")
		}
	} else if t = snap.Topic(ref.name); t == nil {
		return nil, newError(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	return t, nil
}

// resolveIn is resolve's partition half, in the topic resolveTopic found.
func (s *Server) resolveIn(snap *meta.Snapshot, t *meta.Topic, partition int32) (replica.Partition, error) {
	if partition < 0 || partition >= t.Partitions {
		return replica.Partition{}, newError(kerr.UnknownTopicOrPartition, fmt.Sprintf("Partition %d of topic %s does not exist.", partition, t.Name))
	}
	return s.Logs.Lead(snap, t, partition)
}
