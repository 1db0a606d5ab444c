package cluster_test

// Cluster behaviour that depends on etcd's guarantees: read-your-writes
// across brokers, batches larger than a transaction, node.id uniqueness,
// and etcd over TLS with authentication.

import (
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
	"kbroker/internal/testpki"
)

func describeTopicCode(t *testing.T, addr, topic string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, res)
	r := send[*kmsg.DescribeConfigsResponse](t, addr, req).Resources[0]
	return r.ErrorCode, deref(r.ErrorMessage)
}

func describeClientQuota(t *testing.T, addr, clientID string) map[string]float64 {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.Match = "client-id", kmsg.StringPtr(clientID)
	req.Components = append(req.Components, comp)
	out := map[string]float64{}
	for _, e := range send[*kmsg.DescribeClientQuotasResponse](t, addr, req).Entries {
		for _, v := range e.Values {
			out[v.Key] = v.Value
		}
	}
	return out
}

// A change acknowledged by one broker is seen by the next admin request to
// any other broker, with no waiting: admin requests catch up with etcd
// before reading the snapshot (api/catch_up.go).
func TestAdminRequestOnAnotherBrokerSeesAWriteAtOnce(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	for i := range 30 {
		a, b, c := tc.addr(int32(i%3+1)), tc.addr(int32((i+1)%3+1)), tc.addr(int32((i+2)%3+1))
		topic := "ryw" + strconv.Itoa(i)
		createTopic(t, a, topic, 1)
		if md := metadata(t, b, topic); md.Topics[0].ErrorCode != 0 {
			t.Fatalf("round %d: Metadata on another broker right after CreateTopics: %v", i, kerr.ErrorForCode(md.Topics[0].ErrorCode))
		}
		if code, msg := describeTopicCode(t, c, topic); code != 0 {
			t.Fatalf("round %d: DescribeConfigs on another broker right after CreateTopics: %v %s", i, kerr.ErrorForCode(code), msg)
		}
		value := strconv.Itoa(3600000 + i)
		if err := alterTopicConfig(t, b, topic, "retention.ms", value); err != nil {
			t.Fatalf("round %d: IncrementalAlterConfigs on another broker right after CreateTopics: %v", i, err)
		}
		if got := deref(describeConfigs(t, c, topic)["retention.ms"].Value); got != value {
			t.Fatalf("round %d: retention.ms described by a third broker right after the alter: %q, want %s", i, got, value)
		}
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.TimeoutMillis = 10000
		cpt := kmsg.NewCreatePartitionsRequestTopic()
		cpt.Topic, cpt.Count = topic, 2
		cp.Topics = append(cp.Topics, cpt)
		if r := send[*kmsg.CreatePartitionsResponse](t, c, cp); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("round %d: CreatePartitions: %v", i, kerr.ErrorForCode(r.Topics[0].ErrorCode))
		}
		if err := alterClientQuota(t, a, "ryw", "producer_byte_rate", float64(1000+i)); err != nil {
			t.Fatal(err)
		}
		if got := describeClientQuota(t, b, "ryw")["producer_byte_rate"]; got != float64(1000+i) {
			t.Fatalf("round %d: quota described by another broker right after the alter: %v, want %d", i, got, 1000+i)
		}
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TimeoutMillis = 10000
		dt.TopicNames = []string{topic}
		dtt := kmsg.NewDeleteTopicsRequestTopic()
		dtt.Topic = kmsg.StringPtr(topic)
		dt.Topics = append(dt.Topics, dtt)
		if r := send[*kmsg.DeleteTopicsResponse](t, b, dt); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("round %d: DeleteTopics on another broker: %v", i, kerr.ErrorForCode(r.Topics[0].ErrorCode))
		}
		if code, _ := describeTopicCode(t, a, topic); code != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("round %d: DescribeConfigs right after the topic was deleted through another broker: %v, want UNKNOWN_TOPIC_OR_PARTITION", i, kerr.ErrorForCode(code))
		}
	}
}

// The embedded etcd keeps etcd's default --max-txn-ops (128); requests that
// write hundreds of keys still succeed.
func TestAdminBatchesLargerThanEtcdTxnLimit(t *testing.T) {
	tc := startCluster(t, 2, config.Properties{
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found": "true",
	}, nil)
	const n = 500
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for i := range n {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "batch"+strconv.Itoa(i), 1, 1
		if i%2 == 0 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
	}
	for _, rt := range send[*kmsg.CreateTopicsResponse](t, tc.addr(1), req).Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("creating %s in a batch of %d: %v %s", rt.Topic, n, kerr.ErrorForCode(rt.ErrorCode), deref(rt.ErrorMessage))
		}
	}
	if code, msg := describeTopicCode(t, tc.addr(2), "batch499"); code != 0 {
		t.Fatalf("broker 2 describing the last topic of the batch: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := len(metadata(t, tc.addr(2)).Topics); got != n {
		t.Fatalf("broker 2 lists %d topics, want %d", got, n)
	}

	aq := kmsg.NewPtrAlterClientQuotasRequest()
	for i := range 300 {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = "client-id", kmsg.StringPtr("batch"+strconv.Itoa(i))
		e.Entity = append(e.Entity, ec)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1e6
		e.Ops = append(e.Ops, op)
		aq.Entries = append(aq.Entries, e)
	}
	for _, e := range send[*kmsg.AlterClientQuotasResponse](t, tc.addr(1), aq).Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("AlterClientQuotas of 300 entities: %v %s", kerr.ErrorForCode(e.ErrorCode), deref(e.ErrorMessage))
		}
	}
	dq := send[*kmsg.DescribeClientQuotasResponse](t, tc.addr(2), kmsg.NewPtrDescribeClientQuotasRequest())
	if len(dq.Entries) != 300 {
		t.Fatalf("broker 2 describes %d quota entities, want 300", len(dq.Entries))
	}

	ca := kmsg.NewPtrCreateACLsRequest()
	for i := range 300 {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "batch"+strconv.Itoa(i%200), kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:u"+strconv.Itoa(i), "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, c)
	}
	for _, r := range send[*kmsg.CreateACLsResponse](t, tc.addr(1), ca).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls of 300 ACLs: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
		}
	}
	da := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	da.Filters = append(da.Filters, f)
	r := send[*kmsg.DeleteACLsResponse](t, tc.addr(2), da).Results[0]
	if r.ErrorCode != 0 || len(r.MatchingACLs) != 300 {
		t.Fatalf("DeleteAcls of everything on broker 2: %v %s, %d matched; want all 300", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), len(r.MatchingACLs))
	}
}

func clusterProps(etcd *etcdtest.Etcd, id int32) config.Properties {
	return config.Properties{
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"node.id":                          strconv.Itoa(int(id)),
		"metadata.etcd.endpoints":          etcd.Endpoint(),
		"metadata.etcd.session.timeout.ms": "2000",
		"metadata.etcd.request.timeout.ms": "1000",
	}
}

// startErr starts a broker that is expected to fail, and returns why.
func startErr(t *testing.T, props config.Properties) error {
	t.Helper()
	props["log.dirs"] = t.TempDir()
	b, err := broker.New(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		return err
	}
	b.Close()
	return nil
}

// Kafka refuses a broker whose node.id a live broker holds; a broker
// restarted after a crash waits out its former registration instead.
func TestDuplicateNodeIDFailsToStart(t *testing.T) {
	tc := startCluster(t, 1, nil, nil)
	start := time.Now()
	err := startErr(t, clusterProps(tc.etcd, 1))
	if !errors.Is(err, cluster.ErrDuplicateBroker) || !strings.Contains(err.Error(), "node.id") || !strings.Contains(err.Error(), tc.addr(1)) {
		t.Fatalf("second broker with node.id 1: %v; want ErrDuplicateBroker naming the holder's address", err)
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if got := brokerIDs(metadata(t, tc.addr(1))); len(got) != 1 {
		t.Fatalf("the live broker lists %v after the refused start", got)
	}

	// What a crashed broker leaves: a registration whose lease nobody
	// keeps alive.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{tc.etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := testkit.Context(t, 10*time.Second)
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/kbroker/"+meta.BrokerKey(2), `{"id":2}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	b2 := brokertest.Start(t, clusterProps(tc.etcd, 2))
	eventually(t, "the restarted broker 2 listed", func() bool { return len(metadata(t, b2.Addr()).Brokers) == 2 })
}

// etcd serving TLS with authentication on: a broker with the CA, user and
// password works; a wrong password fails to start, saying why.
func TestEtcdOverTLSWithAuthentication(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "kbroker"})
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cert, key, ca := write("etcd.pem", pki.ServerPEM), write("etcd.key", pki.ServerKeyPEM), write("ca.pem", pki.CAPEM)
	etcd := etcdtest.StartWith(t, etcdtest.Options{CertFile: cert, KeyFile: key})
	if !strings.HasPrefix(etcd.Endpoint(), "https://") {
		t.Fatalf("endpoint %s", etcd.Endpoint())
	}
	if err := etcd.EnableAuth(pki.ClientTLS(false), "s3cret"); err != nil {
		t.Fatal(err)
	}
	props := func(id int32, password string) config.Properties {
		p := clusterProps(etcd, id)
		p["metadata.etcd.ssl.ca.location"] = ca
		p["metadata.etcd.username"], p["metadata.etcd.password"] = "root", password
		return p
	}
	b1 := brokertest.Start(t, props(1, "s3cret"))
	b2 := brokertest.Start(t, props(2, "s3cret"))
	createTopic(t, b1.Addr(), "secure", 0, 2)
	producer := testkit.Client(t, "", kgo.SeedBrokers(b1.Addr()), kgo.DefaultProduceTopic("secure"))
	if err := producer.ProduceSync(testkit.Context(t, 10*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("producing through a cluster on TLS etcd with auth: %v", err)
	}
	if got := brokerIDs(metadata(t, b2.Addr())); len(got) != 2 {
		t.Fatalf("brokers listed: %v", got)
	}

	err := startErr(t, props(3, "wrong"))
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("broker with a wrong etcd password: %v; want an authentication failure", err)
	}
	t.Logf("wrong password: %v", err)
	plain := props(3, "s3cret")
	delete(plain, "metadata.etcd.ssl.ca.location")
	if err := startErr(t, plain); err == nil {
		t.Fatal("a broker without the etcd CA started against etcd's TLS")
	} else {
		t.Logf("without the CA: %v", err)
	}
}
