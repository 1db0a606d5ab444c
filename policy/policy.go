// Package policy lets a program that embeds kbroker veto admin changes, as
// Apache Kafka's AlterConfigPolicy and CreateTopicPolicy plugins do
// (KIP-108, KIP-133). A policy returns an error to reject; the client
// receives POLICY_VIOLATION with the error's message, for that resource only.
// Policies run for validate-only requests too, after the broker's own
// checks, and must not have side effects.
package policy

// ResourceType is a config resource type, numbered as on the wire.
type ResourceType int8

const (
	Topic        ResourceType = 2
	Broker       ResourceType = 4
	BrokerLogger ResourceType = 8
	User         ResourceType = 7
	Client       ResourceType = 6
	// Group is a group's configs (Kafka 4's GROUP resource, KIP-848).
	Group ResourceType = 32
)

// ConfigResource names what a config change is for. A Broker with an empty
// name is the cluster-wide default.
type ConfigResource struct {
	Type ResourceType
	Name string
}

// Requester is who sent the request, as Kafka 4's RequestMetadata carries
// it: a policy can let only some principals make a change.
type Requester struct {
	Principal     string // "User:alice"; "User:ANONYMOUS" without authentication
	ClientAddress string // the client's host:port
	Listener      string // the listener the request arrived on, e.g. PLAINTEXT
}

// AlterConfigRequest is one resource's requested change: only the keys the
// request changes, with their new values; a deleted key maps to nil. For
// list keys changed by APPEND or SUBTRACT, the value is the resulting list.
// Resulting is the resource's configs as they would be after the change:
// for a topic every topic config with its effective value, for other
// resources their dynamic overrides (sensitive values are left out).
type AlterConfigRequest struct {
	Resource  ConfigResource
	Configs   map[string]*string
	Resulting map[string]string
	Requester Requester
}

// AlterConfig decides whether a config change may happen.
type AlterConfig interface {
	ValidateAlterConfig(AlterConfigRequest) error
}

// CreateTopicRequest is one topic of a CreateTopics request. When the
// request gave replica assignments, NumPartitions and ReplicationFactor are
// nil and Assignments is set; otherwise the resolved counts are given.
// Configs are the request's own overrides, without broker defaults.
type CreateTopicRequest struct {
	Topic             string
	NumPartitions     *int32
	ReplicationFactor *int16
	Assignments       map[int32][]int32
	Configs           map[string]string
	Requester         Requester
}

// CreateTopic decides whether a topic may be created.
type CreateTopic interface {
	ValidateCreateTopic(CreateTopicRequest) error
}

// CreatePartitionsRequest is one topic of a CreatePartitions request,
// after the broker's own checks passed.
type CreatePartitionsRequest struct {
	Topic             string
	CurrentPartitions int32
	NewPartitions     int32 // the requested total
	// Assignments lists the replicas of each new partition; nil when the
	// broker places them.
	Assignments [][]int32
	Requester   Requester
}

// CreatePartitions decides whether a topic may grow.
type CreatePartitions interface {
	ValidateCreatePartitions(CreatePartitionsRequest) error
}

// ClientQuotaRequest is one entity of an AlterClientQuotas request, after
// the broker's own checks passed. Entity maps an entity type ("user",
// "client-id", "ip") to its name, "<default>" for the type's default entity.
// Changes maps each key the request names to its new value, nil for a
// removal; Resulting is the entity's quotas after the change.
type ClientQuotaRequest struct {
	Entity    map[string]string
	Changes   map[string]*float64
	Resulting map[string]float64
	Requester Requester
}

// AlterClientQuotas decides whether an entity's quotas may change.
type AlterClientQuotas interface {
	ValidateAlterClientQuotas(ClientQuotaRequest) error
}

// AlterConfigFunc adapts a function to AlterConfig.
type AlterConfigFunc func(AlterConfigRequest) error

func (f AlterConfigFunc) ValidateAlterConfig(r AlterConfigRequest) error { return f(r) }

// CreateTopicFunc adapts a function to CreateTopic.
type CreateTopicFunc func(CreateTopicRequest) error

func (f CreateTopicFunc) ValidateCreateTopic(r CreateTopicRequest) error { return f(r) }
