package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/refusal"
	"kbroker/policy"
)

// maxTopicNameLength is Kafka's limit (249, leaving room for partition
// suffixes in directory names).
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's topic naming rule.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return refusal.New(ErrInvalidTopic, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return refusal.New(ErrInvalidTopic, "Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return refusal.New(ErrInvalidTopic, fmt.Sprintf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return refusal.New(ErrInvalidTopic, fmt.Sprintf("Topic name %s is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name))
		}
	}
	return nil
}

// TopicSpec is a topic about to be created, from CreateTopics or from
// auto-creation.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignment is a manual placement, replicas by partition; nil: the
	// controller places the partitions.
	Assignment map[int32][]int32
	Configs    map[string]string
	// By is who asked, for the create-topic policy (empty for
	// auto-creation).
	By policy.Requester
}

// CheckTopic validates spec against snap, filling in the defaults, and
// runs the create-topic policy, without writing anything.
func (c *Controller) CheckTopic(snap *meta.Snapshot, spec *TopicSpec) error {
	if err := ValidateTopicName(spec.Name); err != nil {
		return err
	}
	if snap.Topic(spec.Name) != nil {
		return refusal.New(meta.ErrTopicExists, fmt.Sprintf("Topic '%s' already exists.", spec.Name))
	}
	if len(spec.Assignment) > 0 {
		if spec.Partitions != -1 || spec.ReplicationFactor != -1 {
			return refusal.New(ErrCountsWithAssignment, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		if err := c.checkAssignment(spec.Assignment, 0); err != nil {
			return err
		}
		spec.Partitions = int32(len(spec.Assignment))
		spec.ReplicationFactor = int16(len(spec.Assignment[0]))
		for _, replicas := range spec.Assignment {
			if len(replicas) != int(spec.ReplicationFactor) {
				return refusal.New(ErrInvalidReplicaAssignment, "All partitions in the manual partition assignment must have the same number of replicas.")
			}
		}
	}
	if spec.Partitions == -1 {
		spec.Partitions = c.broker.NumPartitions
	}
	if spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = c.broker.DefaultReplicationFactor
	}
	if spec.Partitions <= 0 {
		return refusal.New(ErrInvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	if spec.ReplicationFactor <= 0 {
		return refusal.New(ErrInvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if err := c.checkReplicationFactor(spec.ReplicationFactor); err != nil {
		return err
	}
	if err := validateTopicConfigs(spec.Configs); err != nil {
		return err
	}
	// A topic is one metadata record, plus one per partition and config.
	if err := checkRecordCount(1 + int64(spec.Partitions) + int64(len(spec.Configs))); err != nil {
		return err
	}
	return c.checkCreateTopicPolicy(spec)
}

// maxRecordsPerUserOp is the most metadata records Kafka's controller writes
// for one request (QuorumController's MAX_RECORDS_PER_USER_OP); more is
// POLICY_VIOLATION. It keeps one CreateTopics or CreatePartitions from making
// every later Metadata answer list billions of partitions.
const maxRecordsPerUserOp = 10000

func checkRecordCount(n int64) error {
	if n > maxRecordsPerUserOp {
		return refusal.New(ErrPolicyViolation, "Unable to perform excessively large batch operation.")
	}
	return nil
}

// checkCreateTopicPolicy runs the embedding program's create-topic policy
// with what the request asked for (Kafka passes either the counts or the
// assignment, never both).
func (c *Controller) checkCreateTopicPolicy(spec *TopicSpec) error {
	if c.policy == nil {
		return nil
	}
	req := policy.CreateTopicRequest{Topic: spec.Name, Configs: maps.Clone(spec.Configs), Requester: spec.By}
	if len(spec.Assignment) > 0 {
		req.Assignments = maps.Clone(spec.Assignment)
	} else {
		req.NumPartitions, req.ReplicationFactor = &spec.Partitions, &spec.ReplicationFactor
	}
	if err := c.policy.ValidateCreateTopic(req); err != nil {
		return refusal.New(ErrPolicyViolation, err.Error())
	}
	return nil
}

// validateTopicConfigs checks every key and value against the catalog.
func validateTopicConfigs(configs map[string]string) error {
	for name, value := range configs {
		d := config.Topics.Lookup(name)
		if d == nil {
			return refusal.New(ErrInvalidConfig, fmt.Sprintf("Unknown topic config name: %s", name))
		}
		if err := d.Validate(value); err != nil {
			return refusal.New(ErrInvalidConfig, err.Error())
		}
	}
	return nil
}

// CreateTopic checks spec against the current snapshot and creates it
// (auto-creation: one topic, one request).
func (c *Controller) CreateTopic(ctx context.Context, spec *TopicSpec) (*meta.Topic, error) {
	if err := c.CheckTopic(c.store.Snapshot(), spec); err != nil {
		return nil, err
	}
	t, err := c.store.CreateTopic(ctx, c.newTopic(c.store.Snapshot(), spec), spec.Configs)
	if err != nil {
		return nil, err
	}
	c.logCreated(t)
	return t, nil
}

// AutoCreateTopic creates name with the broker's default counts, for a
// Metadata request naming a topic that does not exist. That the topic was
// created meanwhile, by another request or broker, is no error: as in
// Kafka, a Metadata request never answers TOPIC_ALREADY_EXISTS for a topic
// it would create, but the topic once this broker's image has it, and
// ErrTopicBeingCreated until then. Whether the race was lost to the check
// (a refusal) or to the store write (its bare sentinel), the answer is the
// same.
func (c *Controller) AutoCreateTopic(ctx context.Context, name string) (*meta.Topic, error) {
	t, err := c.CreateTopic(ctx, &TopicSpec{Name: name, Partitions: -1, ReplicationFactor: -1})
	if !errors.Is(err, meta.ErrTopicExists) {
		return t, err
	}
	if t = c.store.Snapshot().Topic(name); t == nil {
		return nil, refusal.New(ErrTopicBeingCreated, fmt.Sprintf("Topic '%s' is being created.", name))
	}
	return t, nil
}

// CreateInternalTopic creates an internal topic of the broker's own
// (`__consumer_offsets`, `__transaction_state`) with partitions placed like
// any topic's, replicationFactor replicas each
// (offsets.topic.replication.factor, transaction.state.log.replication.factor)
// but no more than the live brokers, so a cluster smaller than the factor
// (a one-broker dev cluster above all) still gets its coordinators; a
// min.insync.replicas in configs is lowered to the factor used, or every
// write of a clamped topic would be refused NOT_ENOUGH_REPLICAS. It skips
// the create-topic policy, which in Kafka applies only to topics clients
// ask for. A topic that exists already is no error: the first coordinator
// lookup of several racing brokers or requests wins, and the others find
// its topic.
func (c *Controller) CreateInternalTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	snap := c.store.Snapshot()
	rf := max(1, min(int(replicationFactor), len(c.liveBrokers(snap))))
	if v, ok := configs["min.insync.replicas"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > rf {
			configs = maps.Clone(configs) // the caller's map stays as given
			configs["min.insync.replicas"] = strconv.Itoa(rf)
		}
	}
	spec := &TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: int16(rf), Configs: configs}
	t, err := c.store.CreateTopic(ctx, c.newTopic(snap, spec), configs)
	switch {
	case err == nil:
		c.logCreated(t)
	case errors.Is(err, meta.ErrTopicExists):
		err = nil
	}
	return err
}

// DuplicateTopics refuses every topic a CreateTopics request names more
// than once, each mention of it (Kafka answers INVALID_REQUEST): errs[i]
// is names[i]'s refusal, nil for a name given once.
func DuplicateTopics(clientID string, names []string) []error {
	counts := map[string]int{}
	for _, name := range names {
		counts[name]++
	}
	errs := make([]error, len(names))
	for i, name := range names {
		if counts[name] > 1 {
			errs[i] = refusal.New(ErrDuplicateTopic, fmt.Sprintf("Create topics request from client `%s` contains multiple entries for the following topics: %s", clientID, name))
		}
	}
	return errs
}

// CreateTopics creates every specs[i] that errs[i] does not refuse, each
// already passed by CheckTopic against snap, in one store transaction, so
// a request for many topics costs one durable commit. created[i] is the
// topic of specs[i], or errs[i] (set here for a failed create) says why
// there is none.
func (c *Controller) CreateTopics(ctx context.Context, snap *meta.Snapshot, specs []*TopicSpec, errs []error) (created []*meta.Topic) {
	created = make([]*meta.Topic, len(specs))
	var batch []meta.NewTopic
	var batchIdx []int
	for i, spec := range specs {
		if errs[i] == nil && spec != nil {
			batch = append(batch, meta.NewTopic{Topic: c.newTopic(snap, spec), Configs: spec.Configs})
			batchIdx = append(batchIdx, i)
		}
	}
	if len(batch) == 0 {
		return created
	}
	topics, createErrs, err := c.store.CreateTopics(ctx, batch)
	for j, i := range batchIdx {
		switch {
		case err != nil:
			errs[i] = err
		case createErrs[j] != nil:
			errs[i] = createErrs[j]
		default:
			created[i] = topics[j]
			c.logCreated(topics[j])
		}
	}
	return created
}

func (c *Controller) logCreated(t *meta.Topic) {
	c.log.Info("created topic", "topic", t.Name, "id", t.ID.String(), "partitions", t.Partitions)
}

// newTopic is the record of spec, with its partitions placed: as the
// request's manual assignment says, or across the live brokers.
func (c *Controller) newTopic(snap *meta.Snapshot, spec *TopicSpec) meta.Topic {
	t := meta.Topic{Name: spec.Name, Partitions: spec.Partitions, ReplicationFactor: spec.ReplicationFactor}
	if len(spec.Assignment) > 0 {
		for p := range spec.Partitions {
			t.Replicas = append(t.Replicas, spec.Assignment[p])
		}
	} else {
		t.Replicas = c.place(snap, spec.Partitions, int(spec.ReplicationFactor), 0)
	}
	return t
}

// TopicToDelete finds the topic one DeleteTopics entry names: by name
// when it has one (always before v6), else by its id. A topic that does
// not exist is refused the way it was named: UNKNOWN_TOPIC_OR_PARTITION by
// name, UNKNOWN_TOPIC_ID by id.
func TopicToDelete(snap *meta.Snapshot, name *string, id [16]byte) (t *meta.Topic, byName bool, err error) {
	byName = name != nil && *name != ""
	if byName {
		t = snap.Topic(*name)
	} else {
		t = snap.TopicByID(meta.TopicID(id))
	}
	switch {
	case t == nil && byName:
		err = refusal.New(meta.ErrUnknownTopic, "This server does not host this topic-partition.")
	case t == nil:
		err = refusal.New(ErrUnknownTopicID, "This server does not host this topic ID.")
	}
	return t, byName, err
}

// DeleteTopic deletes t's metadata in one store transaction; every broker
// then deletes the partition logs it holds.
func (c *Controller) DeleteTopic(ctx context.Context, t *meta.Topic) error {
	if err := c.store.DeleteTopic(ctx, t.Name); err != nil {
		return err
	}
	c.log.Info("deleted topic", "topic", t.Name, "id", t.ID.String())
	return nil
}
