package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// partitionRef names a partition as a request does: by topic name, or by
// topic id for the versions that use ids (Produce v13+, Fetch v13+).
type partitionRef struct {
	name      string
	id        [16]byte
	byID      bool
	partition int32
}

// resolve finds the topic and opens the partition's log, or returns the
// error Kafka gives for a missing topic, id or partition.
func (s *Server) resolve(snap *meta.Snapshot, ref partitionRef) (*meta.Topic, *storage.Log, error) {
	var t *meta.Topic
	if ref.byID {
		if t = snap.TopicByID(meta.TopicID(ref.id)); t == nil {
			return nil, nil, newError(kerr.UnknownTopicID, "This server does not host this topic ID.")
		}
	} else if t = snap.Topic(ref.name); t == nil {
		return nil, nil, newError(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	if ref.partition < 0 || ref.partition >= t.Partitions {
		return t, nil, newError(kerr.UnknownTopicOrPartition, fmt.Sprintf("Partition %d of topic %s does not exist.", ref.partition, t.Name))
	}
	// One replica per partition: only its leader has the log.
	if leader := t.Leader(ref.partition, s.nodeID()); leader != s.nodeID() {
		return t, nil, newError(kerr.NotLeaderForPartition, fmt.Sprintf("Broker %d is not the leader of %s-%d; broker %d is.", s.nodeID(), t.Name, ref.partition, leader))
	}
	l, err := s.Logs.Log(snap, t, ref.partition)
	if err != nil {
		return t, nil, fmt.Errorf("%w: %v", storage.ErrStorage, err)
	}
	return t, l, nil
}
