package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics v5+ returns the new topic's configs only to a principal that
// may DESCRIBE_CONFIGS it; anyone else still creates the topic but gets
// topic_config_error_code TOPIC_AUTHORIZATION_FAILED, counts of -1 and no
// configs, as Kafka's controller answers.
func TestCreateTopicsConfigsNeedDescribeConfigs(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	alice := client(t, addr, scram256("alice", alicePass))
	grant := kmsg.NewPtrCreateACLsRequest()
	grant.Creations = append(topicACL("hidden", kmsg.ACLOperationCreate),
		acl(kmsg.ACLResourceTypeTopic, "shown", kmsg.ACLOperationCreate),
		acl(kmsg.ACLResourceTypeTopic, "shown", kmsg.ACLOperationDescribeConfigs))
	for _, r := range issue(t, admin, grant).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	for _, name := range []string{"hidden", "shown"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		create.Topics = append(create.Topics, rt)
	}
	resp := issue(t, alice, create).(*kmsg.CreateTopicsResponse)
	got := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = rt
	}

	hidden := got["hidden"]
	if hidden.ErrorCode != 0 {
		t.Fatalf("hidden: not created: %v", kerr.ErrorForCode(hidden.ErrorCode))
	}
	if hidden.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("hidden: config error code %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(hidden.ConfigErrorCode))
	}
	if len(hidden.Configs) != 0 || hidden.NumPartitions != -1 || hidden.ReplicationFactor != -1 {
		t.Errorf("hidden: got %d configs, %d partitions, replication %d; want none and -1", len(hidden.Configs), hidden.NumPartitions, hidden.ReplicationFactor)
	}
	if hidden.TopicID == [16]byte{} {
		t.Error("hidden: no topic id")
	}

	shown := got["shown"]
	if shown.ErrorCode != 0 || shown.ConfigErrorCode != 0 {
		t.Fatalf("shown: %v / config %v", kerr.ErrorForCode(shown.ErrorCode), kerr.ErrorForCode(shown.ConfigErrorCode))
	}
	if len(shown.Configs) == 0 || shown.NumPartitions != 2 || shown.ReplicationFactor != 1 {
		t.Errorf("shown: got %d configs, %d partitions, replication %d", len(shown.Configs), shown.NumPartitions, shown.ReplicationFactor)
	}

	// Both exist, whatever alice may see of them.
	md := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"hidden", "shown"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, mt)
	}
	for _, mt := range issue(t, admin, md).(*kmsg.MetadataResponse).Topics {
		if mt.ErrorCode != 0 || len(mt.Partitions) != 2 {
			t.Errorf("%s after creation: %v with %d partitions", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
		}
	}
}
