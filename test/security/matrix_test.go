package security

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// matrixCase is one row of the authorization matrix: one API (or one
// variant of it, such as a follower's Fetch) called as each principal of
// the columns below. A row names the API it covers, so a served API without
// a row fails the matrix; a new API is one more row.
type matrixCase struct {
	key kmsg.Key
	// setup, when set, prepares what the call names (as the super user),
	// before every call: a call that succeeds may consume it.
	setup func(t *testing.T, admin *kgo.Client, name string)
	// call makes the request as cl about the fresh name (rows on the
	// shared topic "t" ignore it) and returns the code the authorizer
	// decides.
	call func(t *testing.T, cl *kgo.Client, name string) int16
	// refused is the code of a principal the rule does not allow; nil:
	// the API needs no permission.
	refused *kerr.Error
	// granted is the code once allowed (nil: success), for rows whose
	// call fails past authorization (a feature kbroker does not have).
	granted *kerr.Error
	// grants are the minimal ACLs that allow the call, on name.
	grants func(name string) []kmsg.CreateACLsRequestCreation
}

// A matrix column: who calls, and which ACLs alice holds for the row.
type matrixColumn int

const (
	superUser     matrixColumn = iota // admin, in super.users
	noACLs                            // alice, holding nothing
	exactAllow                        // alice, holding the row's grants
	denyOverAllow                     // alice, holding the grants and a DENY of each
)

var matrixColumns = map[matrixColumn]string{superUser: "super user", noACLs: "no ACLs", exactAllow: "exact ALLOW", denyOverAllow: "DENY over ALLOW"}

// want is the code a column gets for the row.
func (tc matrixCase) want(col matrixColumn) int16 {
	allowed := col == superUser || col == exactAllow || tc.refused == nil
	switch {
	case !allowed:
		return tc.refused.Code
	case tc.granted != nil:
		return tc.granted.Code
	}
	return 0
}

// noAuthorization lists the APIs that nothing authorizes (they run before
// or during authentication).
var noAuthorization = map[kmsg.Key]bool{kmsg.ApiVersions: true, kmsg.SASLHandshake: true, kmsg.SASLAuthenticate: true}

func acl(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", op, kmsg.ACLPermissionTypeAllow
	return c
}

// denied is the same ACL denying.
func denied(c kmsg.CreateACLsRequestCreation) kmsg.CreateACLsRequestCreation {
	c.PermissionType = kmsg.ACLPermissionTypeDeny
	return c
}

func topicACL(name string, op kmsg.ACLOperation) []kmsg.CreateACLsRequestCreation {
	return []kmsg.CreateACLsRequestCreation{acl(kmsg.ACLResourceTypeTopic, name, op)}
}

func clusterACL(op kmsg.ACLOperation) []kmsg.CreateACLsRequestCreation {
	return []kmsg.CreateACLsRequestCreation{acl(kmsg.ACLResourceTypeCluster, "kafka-cluster", op)}
}

func issue(t *testing.T, cl *kgo.Client, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(ctxT(t), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func onTopic(op kmsg.ACLOperation) func(string) []kmsg.CreateACLsRequestCreation {
	return func(string) []kmsg.CreateACLsRequestCreation { return topicACL("t", op) }
}

func onNamedTopic(op kmsg.ACLOperation) func(string) []kmsg.CreateACLsRequestCreation {
	return func(name string) []kmsg.CreateACLsRequestCreation { return topicACL(name, op) }
}

func onCluster(op kmsg.ACLOperation) func(string) []kmsg.CreateACLsRequestCreation {
	return func(string) []kmsg.CreateACLsRequestCreation { return clusterACL(op) }
}

func createTopicAs(t *testing.T, cl *kgo.Client, name string) {
	t.Helper()
	if _, err := adminClientOf(cl).CreateTopic(ctxT(t), 1, 1, nil, name); err != nil {
		t.Fatal(err)
	}
}

func produceCall(topicID [16]byte, pid func(t *testing.T, cl *kgo.Client) int64) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return transactionalProduceCall(topicID, nil, pid)
}

// transactionalProduceCall produces to "t"; with txnID, a transactional
// batch of that transactional id.
func transactionalProduceCall(topicID [16]byte, txnID *string, pid func(t *testing.T, cl *kgo.Client) int64) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = 1, 5000, txnID
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "t", topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch([]byte("m"), pid(t, cl))
		if txnID != nil {
			rp.Records = transactional(rp.Records)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return issue(t, cl, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
}

func fetchCall(topicID [16]byte, replicaID int32) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.MaxBytes = replicaID, replicaID, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return issue(t, cl, req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
}

func initProducerIDCall(txnID *string) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = txnID, 60000
		return issue(t, cl, req).(*kmsg.InitProducerIDResponse).ErrorCode
	}
}

func createTopicsCall(t *testing.T, cl *kgo.Client, name string) int16 {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	req.Topics = append(req.Topics, rt)
	return issue(t, cl, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
}

func deleteTopicsCall(t *testing.T, cl *kgo.Client, name string) int16 {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	req.TopicNames = []string{name}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = &name
	req.Topics = append(req.Topics, rt)
	return issue(t, cl, req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode
}

func describeConfigsCall(typ kmsg.ConfigResourceType, resource string) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, resource
		req.Resources = append(req.Resources, rr)
		return issue(t, cl, req).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
	}
}

func incrementalAlterConfigsCall(typ kmsg.ConfigResourceType, resource, key, value string) func(t *testing.T, cl *kgo.Client, _ string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, resource
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = key, &value
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return issue(t, cl, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
}

func matrixCases(topicID [16]byte) map[string]matrixCase {
	str := func(s string) *string { return &s }
	return map[string]matrixCase{
		"Produce": {key: kmsg.Produce, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationWrite),
			call: produceCall(topicID, func(*testing.T, *kgo.Client) int64 { return -1 })},
		// KIP-679: an idempotent batch needs no IDEMPOTENT_WRITE at
		// Produce, only WRITE on its topic.
		"Produce/idempotent": {key: kmsg.Produce, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationWrite),
			call: produceCall(topicID, func(t *testing.T, cl *kgo.Client) int64 {
				resp := issue(t, cl, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
				if resp.ErrorCode != 0 {
					return 1 << 40 // any producer id: the refusal comes first
				}
				return resp.ProducerID
			})},
		// A transactional batch needs WRITE on the request's
		// transactional id before anything else, then WRITE on its topic;
		// allowed, the batch reaches KIP-890 verification, which refuses
		// it: its producer has no transaction at the coordinator.
		"Produce/transactional": {key: kmsg.Produce, refused: kerr.TransactionalIDAuthorizationFailed, granted: kerr.InvalidTxnState,
			grants: func(string) []kmsg.CreateACLsRequestCreation {
				return append(topicACL("t", kmsg.ACLOperationWrite), acl(kmsg.ACLResourceTypeTransactionalId, "txn", kmsg.ACLOperationWrite))
			},
			call: transactionalProduceCall(topicID, str("txn"), func(*testing.T, *kgo.Client) int64 { return 1 << 40 })},
		"Fetch": {key: kmsg.Fetch, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationRead),
			call: fetchCall(topicID, -1)},
		// Broker to broker: CLUSTER_ACTION (or ALTER) on the cluster; a
		// marker for a producer the partition never saw is written.
		"WriteTxnMarkers": {key: kmsg.WriteTxnMarkers, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationClusterAction),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 1<<41, 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = "t", []int32{0}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				return issue(t, cl, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}},
		"DescribeProducers": {key: kmsg.DescribeProducers, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
			}},
		// A replica id marks a follower, which needs CLUSTER_ACTION;
		// allowed, it learns that kbroker serves no followers.
		"Fetch/follower": {key: kmsg.Fetch, refused: kerr.TopicAuthorizationFailed, granted: kerr.NotLeaderForPartition,
			grants: onCluster(kmsg.ACLOperationClusterAction), call: fetchCall(topicID, 2)},
		"ListOffsets": {key: kmsg.ListOffsets, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrListOffsetsRequest()
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
			}},
		// As Kafka: CLUSTER_ACTION (a follower's) or DESCRIBE on the topic
		// (a consumer checking its position after a leader change, KIP-320).
		// Elections and reassignments: ALTER on the cluster (DESCRIBE to
		// list), as Kafka's controller checks. The single broker's topic
		// "t" is led by its only replica, so a granted election is not
		// needed and a granted cancel finds no reassignment.
		"ElectLeaders": {key: kmsg.ElectLeaders, refused: kerr.ClusterAuthorizationFailed, granted: kerr.ElectionNotNeeded, grants: onCluster(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrElectLeadersRequest()
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode
			}},
		"AlterPartitionReassignments": {key: kmsg.AlterPartitionAssignments, refused: kerr.ClusterAuthorizationFailed, granted: kerr.NoReassignmentInProgress, grants: onCluster(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				rp.Replicas = nil // cancel
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode
			}},
		"ListPartitionReassignments": {key: kmsg.ListPartitionReassignments, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode
			}},
		"OffsetForLeaderEpoch": {key: kmsg.OffsetForLeaderEpoch, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationDescribe),
			call: offsetForLeaderEpochCall(-1)},
		"OffsetForLeaderEpoch/replica": {key: kmsg.OffsetForLeaderEpoch, refused: kerr.TopicAuthorizationFailed, grants: onCluster(kmsg.ACLOperationClusterAction),
			call: offsetForLeaderEpochCall(2)},
		"Metadata": {key: kmsg.Metadata, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = str("t")
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.MetadataResponse).Topics[0].ErrorCode
			}},
		"CreateTopics": {key: kmsg.CreateTopics, refused: kerr.TopicAuthorizationFailed, grants: onCluster(kmsg.ACLOperationCreate),
			call: createTopicsCall},
		"CreateTopics/topic ACL": {key: kmsg.CreateTopics, refused: kerr.TopicAuthorizationFailed, grants: onNamedTopic(kmsg.ACLOperationCreate),
			call: createTopicsCall},
		"DeleteTopics": {key: kmsg.DeleteTopics, refused: kerr.TopicAuthorizationFailed, grants: onNamedTopic(kmsg.ACLOperationDelete),
			setup: createTopicAs, call: deleteTopicsCall},
		// Kafka's controller lets DELETE on the cluster delete any topic.
		"DeleteTopics/cluster ACL": {key: kmsg.DeleteTopics, refused: kerr.TopicAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDelete),
			setup: createTopicAs, call: deleteTopicsCall},
		"CreatePartitions": {key: kmsg.CreatePartitions, refused: kerr.TopicAuthorizationFailed, grants: onNamedTopic(kmsg.ACLOperationAlter),
			setup: createTopicAs,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis = 5000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = name, 2
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode
			}},
		"InitProducerId": {key: kmsg.InitProducerID, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationIdempotentWrite),
			call: initProducerIDCall(nil)},
		// KIP-679: WRITE on any topic is enough for an idempotent producer.
		"InitProducerId/topic WRITE": {key: kmsg.InitProducerID, refused: kerr.ClusterAuthorizationFailed, grants: onTopic(kmsg.ACLOperationWrite),
			call: initProducerIDCall(nil)},
		// A transactional id needs WRITE on it (the coordinator is
		// created and loaded by txnMatrixCases before any row runs).
		"InitProducerId/transactional": {key: kmsg.InitProducerID, refused: kerr.TransactionalIDAuthorizationFailed,
			grants: func(string) []kmsg.CreateACLsRequestCreation {
				return []kmsg.CreateACLsRequestCreation{acl(kmsg.ACLResourceTypeTransactionalId, "txn", kmsg.ACLOperationWrite)}
			},
			call: initProducerIDCall(str("txn"))},
		// No permission: admin clients (sarama's ClusterAdmin) call it first.
		"DescribeCluster": {key: kmsg.DescribeCluster,
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse).ErrorCode
			}},
		"DescribeConfigs": {key: kmsg.DescribeConfigs, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationDescribeConfigs),
			call: describeConfigsCall(kmsg.ConfigResourceTypeTopic, "t")},
		"DescribeConfigs/broker": {key: kmsg.DescribeConfigs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribeConfigs),
			call: describeConfigsCall(kmsg.ConfigResourceTypeBroker, "")},
		"AlterConfigs": {key: kmsg.AlterConfigs, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationAlterConfigs),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrAlterConfigsRequest()
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", str("3600000")
				rr.Configs = append(rr.Configs, c)
				req.Resources = append(req.Resources, rr)
				return issue(t, cl, req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
			}},
		"IncrementalAlterConfigs": {key: kmsg.IncrementalAlterConfigs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationAlterConfigs),
			call: incrementalAlterConfigsCall(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "86400000")},
		"IncrementalAlterConfigs/topic": {key: kmsg.IncrementalAlterConfigs, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationAlterConfigs),
			call: incrementalAlterConfigsCall(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "7200000")},
		// Group configs: GROUP DESCRIBE_CONFIGS / ALTER_CONFIGS on the group
		// (which need not exist), GROUP_AUTHORIZATION_FAILED otherwise.
		"DescribeConfigs/group": {key: kmsg.DescribeConfigs, refused: kerr.GroupAuthorizationFailed,
			grants: func(string) []kmsg.CreateACLsRequestCreation {
				return []kmsg.CreateACLsRequestCreation{acl(kmsg.ACLResourceTypeGroup, "g-cfg", kmsg.ACLOperationDescribeConfigs)}
			},
			call: describeConfigsCall(kmsg.ConfigResourceTypeGroupConfig, "g-cfg")},
		"IncrementalAlterConfigs/group": {key: kmsg.IncrementalAlterConfigs, refused: kerr.GroupAuthorizationFailed,
			grants: func(string) []kmsg.CreateACLsRequestCreation {
				return []kmsg.CreateACLsRequestCreation{acl(kmsg.ACLResourceTypeGroup, "g-cfg", kmsg.ACLOperationAlterConfigs)}
			},
			call: incrementalAlterConfigsCall(kmsg.ConfigResourceTypeGroupConfig, "g-cfg", "consumer.session.timeout.ms", "50000")},
		"ListConfigResources": {key: kmsg.ListConfigResources, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribeConfigs),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrListConfigResourcesRequest()).(*kmsg.ListConfigResourcesResponse).ErrorCode
			}},
		"DescribeClientQuotas": {key: kmsg.DescribeClientQuotas, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribeConfigs),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse).ErrorCode
			}},
		"AlterClientQuotas": {key: kmsg.AlterClientQuotas, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationAlterConfigs),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				e := kmsg.NewAlterClientQuotasRequestEntry()
				ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
				ent.Type, ent.Name = "user", str("bob")
				e.Entity = append(e.Entity, ent)
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key, op.Value = "producer_byte_rate", 1024
				e.Ops = append(e.Ops, op)
				req.Entries = append(req.Entries, e)
				return issue(t, cl, req).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode
			}},
		"DescribeUserScramCredentials": {key: kmsg.DescribeUserSCRAMCredentials, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode
			}},
		"AlterUserScramCredentials": {key: kmsg.AlterUserSCRAMCredentials, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations = "bob", 1, 4096
				u.Salt, u.SaltedPassword = []byte("salt-salt-salt"), make([]byte, 32)
				req.Upsertions = append(req.Upsertions, u)
				return issue(t, cl, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode
			}},
		"DescribeAcls": {key: kmsg.DescribeACLs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				return issue(t, cl, req).(*kmsg.DescribeACLsResponse).ErrorCode
			}},
		"CreateAcls": {key: kmsg.CreateACLs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrCreateACLsRequest()
				c := acl(kmsg.ACLResourceTypeTopic, "other", kmsg.ACLOperationRead)
				c.Principal = "User:nobody"
				req.Creations = append(req.Creations, c)
				return issue(t, cl, req).(*kmsg.CreateACLsResponse).Results[0].ErrorCode
			}},
		"DeleteAcls": {key: kmsg.DeleteACLs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				f.Principal = str("User:nobody")
				req.Filters = append(req.Filters, f)
				return issue(t, cl, req).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode
			}},
	}
}

// TestAuthorizationMatrix: every API the broker serves (as ApiVersions
// lists them) × every principal: the super user and a principal holding
// exactly the row's ACLs get through, a principal with no ACLs and one
// whose ALLOW is overridden by a DENY get Kafka's refusal.
func TestAuthorizationMatrix(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	adm := adminClientOf(admin)
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cases := matrixCases(td["t"].ID)
	maps.Copy(cases, groupMatrixCases(t, admin))
	maps.Copy(cases, txnMatrixCases(t, admin))
	maps.Copy(cases, partsMatrixCases())

	alice := client(t, addr, scram256("alice", alicePass))
	covered := map[kmsg.Key]bool{}
	for _, tc := range cases {
		covered[tc.key] = true
	}
	for _, k := range issue(t, alice, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
		if key := kmsg.Key(k.ApiKey); !noAuthorization[key] && !covered[key] {
			t.Errorf("%s is served but has no authorization matrix row", key.Name())
		}
	}
	n := 0
	for row, tc := range cases {
		t.Run(row, func(t *testing.T) {
			for col := superUser; col <= denyOverAllow; col++ {
				n++
				name := fmt.Sprintf("matrix-%d", n)
				if tc.setup != nil {
					tc.setup(t, admin, name)
				}
				cl := alice
				switch col {
				case superUser:
					cl = admin
				case exactAllow, denyOverAllow:
					grantAlice(t, admin, tc, name, col == denyOverAllow)
				}
				got := tc.call(t, cl, name)
				deleteACLsOf(t, admin, "User:alice")
				if want := tc.want(col); got != want {
					t.Errorf("%s: %v, want %v", matrixColumns[col], kerr.ErrorForCode(got), kerr.ErrorForCode(want))
				}
			}
		})
	}
}

// grantAlice gives alice the row's ACLs on name, each also denied with deny.
func grantAlice(t *testing.T, admin *kgo.Client, tc matrixCase, name string, deny bool) {
	t.Helper()
	if tc.grants == nil {
		return
	}
	create := kmsg.NewPtrCreateACLsRequest()
	for _, c := range tc.grants(name) {
		create.Creations = append(create.Creations, c)
		if deny {
			create.Creations = append(create.Creations, denied(c))
		}
	}
	for _, r := range issue(t, admin, create).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

func deleteACLsOf(t *testing.T, admin *kgo.Client, principal string) {
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	f.Principal = &principal
	req.Filters = append(req.Filters, f)
	if code := issue(t, admin, req).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteAcls: %v", kerr.ErrorForCode(code))
	}
}

// offsetForLeaderEpochCall asks where epoch 0 of t-0 ends, as replicaID (-1:
// a consumer).
func offsetForLeaderEpochCall(replicaID int32) func(*testing.T, *kgo.Client, string) int16 {
	return func(t *testing.T, cl *kgo.Client, _ string) int16 {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, replicaID
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return issue(t, cl, req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
	}
}
