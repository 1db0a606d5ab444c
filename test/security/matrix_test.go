package security

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// matrixCase is one API: a call that returns the code the authorizer
// decides, the code a principal without ACLs gets, and the minimal ACLs
// that make the same call succeed.
type matrixCase struct {
	call    func(t *testing.T, cl *kgo.Client) int16
	refused *kerr.Error
	acls    []kmsg.CreateACLsRequestCreation
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

func matrixCases(topicID [16]byte) map[kmsg.Key]matrixCase {
	str := func(s string) *string { return &s }
	return map[kmsg.Key]matrixCase{
		kmsg.Produce: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationWrite),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrProduceRequest()
				req.Acks, req.TimeoutMillis = 1, 5000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic, rt.TopicID = "t", topicID
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = batch([]byte("m"), -1)
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			}},
		kmsg.Fetch: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxBytes = -1, 1<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = "t", topicID
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
			}},
		kmsg.ListOffsets: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrListOffsetsRequest()
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
			}},
		kmsg.Metadata: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = str("t")
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.MetadataResponse).Topics[0].ErrorCode
			}},
		kmsg.CreateTopics: {refused: kerr.TopicAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationCreate),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.TimeoutMillis = 5000
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "new-topic", 1, 1
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
			}},
		kmsg.DeleteTopics: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("doomed", kmsg.ACLOperationDelete),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.TimeoutMillis = 5000
				req.TopicNames = []string{"doomed"}
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = str("doomed")
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode
			}},
		kmsg.CreatePartitions: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis = 5000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = "t", 2
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode
			}},
		kmsg.InitProducerID: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationIdempotentWrite),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				return issue(t, cl, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse).ErrorCode
			}},
		kmsg.DescribeCluster: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse).ErrorCode
			}},
		kmsg.DescribeConfigs: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationDescribeConfigs),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrDescribeConfigsRequest()
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
				req.Resources = append(req.Resources, rr)
				return issue(t, cl, req).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
			}},
		kmsg.AlterConfigs: {refused: kerr.TopicAuthorizationFailed, acls: topicACL("t", kmsg.ACLOperationAlterConfigs),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrAlterConfigsRequest()
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", str("3600000")
				rr.Configs = append(rr.Configs, c)
				req.Resources = append(req.Resources, rr)
				return issue(t, cl, req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
			}},
		kmsg.IncrementalAlterConfigs: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationAlterConfigs),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrIncrementalAlterConfigsRequest()
				rr := kmsg.NewIncrementalAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "log.retention.ms", str("86400000")
				rr.Configs = append(rr.Configs, c)
				req.Resources = append(req.Resources, rr)
				return issue(t, cl, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
			}},
		kmsg.DescribeClientQuotas: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationDescribeConfigs),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse).ErrorCode
			}},
		kmsg.AlterClientQuotas: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationAlterConfigs),
			call: func(t *testing.T, cl *kgo.Client) int16 {
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
		kmsg.DescribeUserSCRAMCredentials: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode
			}},
		kmsg.AlterUserSCRAMCredentials: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations = "bob", 1, 4096
				u.Salt, u.SaltedPassword = []byte("salt-salt-salt"), make([]byte, 32)
				req.Upsertions = append(req.Upsertions, u)
				return issue(t, cl, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode
			}},
		kmsg.DescribeACLs: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				return issue(t, cl, req).(*kmsg.DescribeACLsResponse).ErrorCode
			}},
		kmsg.CreateACLs: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrCreateACLsRequest()
				c := acl(kmsg.ACLResourceTypeTopic, "other", kmsg.ACLOperationRead)
				c.Principal = "User:nobody"
				req.Creations = append(req.Creations, c)
				return issue(t, cl, req).(*kmsg.CreateACLsResponse).Results[0].ErrorCode
			}},
		kmsg.DeleteACLs: {refused: kerr.ClusterAuthorizationFailed, acls: clusterACL(kmsg.ACLOperationAlter),
			call: func(t *testing.T, cl *kgo.Client) int16 {
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

// TestAuthorizationMatrix: for every API the broker serves (as ApiVersions
// lists them), a principal without ACLs is refused with Kafka's code, and
// the same call succeeds once the minimal ACL exists.
func TestAuthorizationMatrix(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	adm := adminClientOf(admin)
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cases := matrixCases(td["t"].ID)
	maps.Copy(cases, groupMatrixCases(t, admin))

	alice := client(t, addr, scram256("alice", alicePass))
	versions := issue(t, alice, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range versions.ApiKeys {
		key := kmsg.Key(k.ApiKey)
		if noAuthorization[key] {
			continue
		}
		tc, ok := cases[key]
		if !ok {
			t.Errorf("%s is served but has no authorization matrix case", key.Name())
			continue
		}
		t.Run(key.Name(), func(t *testing.T) {
			if got := tc.call(t, alice); got != tc.refused.Code {
				t.Fatalf("without ACLs: %v, want %v", kerr.ErrorForCode(got), tc.refused)
			}
			create := kmsg.NewPtrCreateACLsRequest()
			create.Creations = tc.acls
			for _, r := range issue(t, admin, create).(*kmsg.CreateACLsResponse).Results {
				if r.ErrorCode != 0 {
					t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(r.ErrorCode))
				}
			}
			defer deleteACLsOf(t, admin, "User:alice")
			if got := tc.call(t, alice); got != 0 {
				t.Fatalf("with %d ACLs: %v, want success", len(tc.acls), kerr.ErrorForCode(got))
			}
		})
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
