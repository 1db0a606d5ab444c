package controller

import "errors"

// The controller's refusals, each returned as a refusal.Error with
// Kafka's message for it.
var (
	// ErrInvalidTopic: a topic name Kafka does not allow.
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrCountsWithAssignment: a topic asked for with both a partition
	// count or replication factor and a manual assignment.
	ErrCountsWithAssignment = errors.New("partition counts and a replica assignment both set")
	// ErrInvalidPartitions: a partition count that is not positive, or not
	// an increase.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidReplicationFactor: more replicas than live brokers, or
	// more than the one kbroker keeps.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidReplicaAssignment: a manual assignment with gaps, empty or
	// repeated replicas, or unknown brokers.
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrInvalidConfig: a topic config the catalog does not know or whose
	// value it refuses.
	ErrInvalidConfig = errors.New("invalid topic config")
	// ErrPolicyViolation: refused by the create-topic policy, or more
	// metadata records than one request may write.
	ErrPolicyViolation = errors.New("policy violation")
	// ErrTopicBeingCreated: a topic an auto-creation found created by
	// someone else, and not yet in this broker's image: retriable
	// (LEADER_NOT_AVAILABLE), as Kafka answers for a topic still being
	// created.
	ErrTopicBeingCreated = errors.New("topic being created")
	// ErrDuplicateTopic: a topic named twice in one CreateTopics request.
	ErrDuplicateTopic = errors.New("topic named twice")
	// ErrUnknownTopicID: a topic id no topic has.
	ErrUnknownTopicID = errors.New("unknown topic id")
)
