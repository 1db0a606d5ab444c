package security

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sarama's ClusterAdmin, as an ordinary SASL user holding no ACLs, starts
// and describes the cluster: DescribeCluster needs no permission.
func TestSaramaClusterAdminAsOrdinaryUser(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	ca, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.SASLTypeSCRAMSHA256, "alice", alicePass))
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	brokers, controller, err := ca.DescribeCluster()
	if err != nil {
		t.Fatalf("DescribeCluster as alice: %v", err)
	}
	if len(brokers) != 1 || controller < 0 {
		t.Fatalf("DescribeCluster as alice: brokers %v, controller %d", brokers, controller)
	}
	if topics, err := ca.ListTopics(); err != nil || len(topics) != 0 {
		t.Fatalf("ListTopics as alice without ACLs: %v, %v", topics, err)
	}
}

// KIP-430's cluster bitfield goes only to a principal that may DESCRIBE
// the cluster; any other gets 0, whatever else it may do.
func TestClusterAuthorizedOperationsNeedDescribe(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	alice := client(t, addr, scram256("alice", alicePass))
	ops := func() int32 {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp := issue(t, alice, req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("DescribeCluster: code %d", resp.ErrorCode)
		}
		return resp.ClusterAuthorizedOperations
	}
	grant := func(op kmsg.ACLOperation) {
		create := kmsg.NewPtrCreateACLsRequest()
		create.Creations = clusterACL(op)
		if code := issue(t, admin, create).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != 0 {
			t.Fatalf("CreateAcls: code %d", code)
		}
	}
	if got := ops(); got != 0 {
		t.Fatalf("no ACLs: cluster operations %b, want 0", got)
	}
	grant(kmsg.ACLOperationCreate)
	if got := ops(); got != 0 {
		t.Fatalf("CREATE only: cluster operations %b, want 0", got)
	}
	grant(kmsg.ACLOperationDescribe)
	if got, want := ops(), int32(1<<kmsg.ACLOperationCreate|1<<kmsg.ACLOperationDescribe); got != want {
		t.Fatalf("CREATE and DESCRIBE: cluster operations %b, want %b", got, want)
	}
}

// DeleteTopics reveals no more than DESCRIBE allows: an undescribable name
// is refused before its existence is looked at, a describable one that
// does not exist is unknown, and a topic named by id that the principal
// may not delete is answered without its name unless it may describe it.
func TestDeleteTopicsRevealsOnlyWhatDescribeAllows(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	alice := client(t, addr, scram256("alice", alicePass))
	createTopicAs(t, admin, "kept")
	createTopicAs(t, admin, "seen")
	grant := kmsg.NewPtrCreateACLsRequest()
	grant.Creations = append(topicACL("missing", kmsg.ACLOperationDescribe), topicACL("seen", kmsg.ACLOperationDescribe)...)
	for _, r := range issue(t, admin, grant).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls: code %d", r.ErrorCode)
		}
	}
	ids, err := adminClientOf(admin).ListTopics(ctxT(t), "kept", "seen")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	for _, name := range []string{"hidden", "missing"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	for _, name := range []string{"kept", "seen"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = ids[name].ID
		req.Topics = append(req.Topics, rt)
	}
	resp := issue(t, alice, req).(*kmsg.DeleteTopicsResponse)
	type answer struct {
		name string
		code int16
	}
	var got []answer
	for _, rt := range resp.Topics {
		a := answer{code: rt.ErrorCode}
		if rt.Topic != nil {
			a.name = *rt.Topic
		}
		got = append(got, a)
	}
	want := []answer{{"hidden", 29}, {"missing", 3}, {"", 29}, {"seen", 29}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v (29: TOPIC_AUTHORIZATION_FAILED, 3: UNKNOWN_TOPIC_OR_PARTITION)", got, want)
		}
	}
}
