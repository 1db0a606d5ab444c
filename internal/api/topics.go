package api

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/policy"
)

// maxTopicNameLength is Kafka's limit (249, leaving room for partition
// suffixes in directory names).
const maxTopicNameLength = 249

// validateTopicName applies Kafka's topic naming rule.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return newError(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return newError(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return newError(kerr.InvalidTopicException, fmt.Sprintf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return newError(kerr.InvalidTopicException, fmt.Sprintf("Topic name %s is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name))
		}
	}
	return nil
}

// topicSpec is a topic about to be created, from CreateTopics or from
// auto-creation.
type topicSpec struct {
	name              string
	partitions        int32 // -1: num.partitions
	replicationFactor int16 // -1: default.replication.factor
	assignment        map[int32][]int32
	configs           map[string]string
}

// checkTopic validates spec, filling defaults, without creating anything.
func (s *Server) checkTopic(snap *meta.Snapshot, spec *topicSpec) error {
	if err := validateTopicName(spec.name); err != nil {
		return err
	}
	if snap.Topic(spec.name) != nil {
		return newError(kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", spec.name))
	}
	if len(spec.assignment) > 0 {
		if spec.partitions != -1 || spec.replicationFactor != -1 {
			return newError(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		if err := s.checkAssignment(spec.assignment, 0); err != nil {
			return err
		}
		spec.partitions = int32(len(spec.assignment))
		spec.replicationFactor = int16(len(spec.assignment[0]))
	}
	if spec.partitions == -1 {
		spec.partitions = s.Broker.NumPartitions
	}
	if spec.replicationFactor == -1 {
		spec.replicationFactor = s.Broker.DefaultReplicationFactor
	}
	if spec.partitions <= 0 {
		return newError(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	if spec.replicationFactor <= 0 {
		return newError(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if err := s.checkReplicationFactor(spec.replicationFactor); err != nil {
		return err
	}
	if err := validateTopicConfigs(spec.configs); err != nil {
		return err
	}
	// A topic is one metadata record, plus one per partition and config.
	if err := checkRecordCount(1 + int64(spec.partitions) + int64(len(spec.configs))); err != nil {
		return err
	}
	return s.checkCreateTopicPolicy(spec)
}

// maxRecordsPerUserOp is the most metadata records Kafka's controller writes
// for one request (QuorumController's MAX_RECORDS_PER_USER_OP); more is
// POLICY_VIOLATION. It keeps one CreateTopics or CreatePartitions from making
// every later Metadata answer list billions of partitions.
const maxRecordsPerUserOp = 10000

func checkRecordCount(n int64) error {
	if n > maxRecordsPerUserOp {
		return newError(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
	}
	return nil
}

// checkCreateTopicPolicy runs the embedding program's create-topic policy
// with what the request asked for (Kafka passes either the counts or the
// assignment, never both).
func (s *Server) checkCreateTopicPolicy(spec *topicSpec) error {
	if s.CreateTopicPolicy == nil {
		return nil
	}
	req := policy.CreateTopicRequest{Topic: spec.name, Configs: maps.Clone(spec.configs)}
	if len(spec.assignment) > 0 {
		req.Assignments = maps.Clone(spec.assignment)
	} else {
		req.NumPartitions, req.ReplicationFactor = &spec.partitions, &spec.replicationFactor
	}
	if err := s.CreateTopicPolicy.ValidateCreateTopic(req); err != nil {
		return newError(kerr.PolicyViolation, err.Error())
	}
	return nil
}

// checkAssignment checks manual replica assignments, numbered from first.
func (s *Server) checkAssignment(assignment map[int32][]int32, first int32) error {
	live := s.liveBrokerSet(s.Store.Snapshot())
	for i := first; i < first+int32(len(assignment)); i++ {
		replicas, ok := assignment[i]
		if !ok {
			return newError(kerr.InvalidReplicaAssignment, "Partitions must be numbered consecutively from "+strconv.Itoa(int(first)))
		}
		if len(replicas) == 0 {
			return newError(kerr.InvalidReplicaAssignment, fmt.Sprintf("Partition %d has an empty replica list", i))
		}
		seen := map[int32]bool{}
		for _, r := range replicas {
			if seen[r] {
				return newError(kerr.InvalidReplicaAssignment, fmt.Sprintf("Partition %d lists broker %d twice", i, r))
			}
			seen[r] = true
			if _, live := live[r]; !live {
				return newError(kerr.InvalidReplicaAssignment, fmt.Sprintf("Unknown broker %d in replica assignment of partition %d", r, i))
			}
		}
	}
	return nil
}

// validateTopicConfigs checks every key and value against the catalog.
func validateTopicConfigs(configs map[string]string) error {
	for name, value := range configs {
		d := config.Topics.Lookup(name)
		if d == nil {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Unknown topic config name: %s", name))
		}
		if err := d.Validate(value); err != nil {
			return newError(kerr.InvalidConfig, err.Error())
		}
	}
	return nil
}

// createTopic validates and stores spec.
func (s *Server) createTopic(ctx context.Context, spec *topicSpec) (*meta.Topic, error) {
	if err := s.checkTopic(s.Store.Snapshot(), spec); err != nil {
		return nil, err
	}
	t, err := s.Store.CreateTopic(ctx, s.newTopic(s.Store.Snapshot(), spec), spec.configs)
	if err != nil {
		return nil, err
	}
	s.Logger.Info("created topic", "topic", t.Name, "id", t.ID.String(), "partitions", t.Partitions)
	return t, nil
}

// newTopic is the record of spec, with its partitions placed: as the
// request's manual assignment says, or across the live brokers.
func (s *Server) newTopic(snap *meta.Snapshot, spec *topicSpec) meta.Topic {
	t := meta.Topic{Name: spec.name, Partitions: spec.partitions, ReplicationFactor: spec.replicationFactor}
	if len(spec.assignment) > 0 {
		for p := range spec.partitions {
			t.Replicas = append(t.Replicas, spec.assignment[p])
		}
	} else {
		t.Replicas = s.place(snap, spec.partitions)
	}
	return t
}

func itoa32(n int32) string { return strconv.Itoa(int(n)) }
