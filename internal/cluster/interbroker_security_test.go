package cluster_test

// Brokers that reach each other over an authenticated inter-broker
// listener, as Kafka's replica fetchers and transaction marker senders do:
// SASL_SSL with SCRAM, the ACL authorizer on, the brokers' principal
// allowed CLUSTER_ACTION (or not). Test clients use a PLAINTEXT listener
// of their own whose principal, User:ANONYMOUS, is a super user, so that
// only the brokers' own connections depend on what is being tested.

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/auth"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
	"kbroker/internal/testpki"
)

const (
	brokerUser     = "broker"
	brokerPassword = "inter-broker-secret"
)

// createScramUser writes a SCRAM-SHA-512 credential into the cluster's
// store before any broker starts, as kafka-storage format --add-scram
// does for a new Kafka cluster.
func createScramUser(t *testing.T, etcd *etcdtest.Etcd, user, password string) {
	t.Helper()
	ctx := testkit.Context(t, 10*time.Second)
	backend, err := meta.OpenEtcd(ctx, meta.EtcdOptions{Endpoints: []string{etcd.Endpoint()}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := meta.Open(backend, slog.New(slog.DiscardHandler))
	if err != nil {
		backend.Close()
		t.Fatal(err)
	}
	defer store.Close()
	cred, err := auth.NewCredential(auth.MechanismScramSHA512, password, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AlterScram(ctx, user, meta.ScramChange{Upserts: []auth.Credential{cred}}); err != nil {
		t.Fatal(err)
	}
}

// saslSSLProps are the settings of a broker whose INTERNAL listener, the
// inter-broker one, is SASL_SSL with SCRAM-SHA-512 and authenticates to
// the others as user with password; CLIENT is the tests' PLAINTEXT one.
func saslSSLProps(keystore, truststore, user, password string) config.Properties {
	return config.Properties{
		"listeners":                                             "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map":                        "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL",
		"inter.broker.listener.name":                            "INTERNAL",
		"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.internal.ssl.keystore.location":          keystore,
		"listener.name.internal.ssl.truststore.location":        truststore,
		"listener.name.internal.scram-sha-512.sasl.jaas.config": auth.ScramLoginModule + ` required username="` + user + `" password="` + password + `";`,
		"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	}
}

// startSecureCluster starts n brokers on a fresh etcd with common props
// and perNode overrides; logs[i] collects broker i+1's logs.
func startSecureCluster(t *testing.T, etcd *etcdtest.Etcd, n int, common config.Properties, perNode map[int32]config.Properties) (*testCluster, []*testkit.LogBuffer) {
	t.Helper()
	tc := &testCluster{etcd: etcd}
	var logs []*testkit.LogBuffer
	for id := int32(1); id <= int32(n); id++ {
		props := config.Properties{
			"node.id":                          strconv.Itoa(int(id)),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"metadata.etcd.request.timeout.ms": "1000",
			"log.retention.check.interval.ms":  "600000",
			"replica.lag.time.max.ms":          "1000",
			"replica.fetch.backoff.ms":         "200",
		}
		for k, v := range common {
			props[k] = v
		}
		for k, v := range perNode[id] {
			props[k] = v
		}
		buf := &testkit.LogBuffer{}
		logs = append(logs, buf)
		logger := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
		tc.brokers = append(tc.brokers, brokertest.Start(t, props, broker.WithLogger(logger)))
	}
	return tc, logs
}

// produceWithin produces r and waits at most d for its acknowledgement:
// kgo retries NOT_ENOUGH_REPLICAS (a follower that cannot fetch) without
// end, so a broken replication would otherwise hang the test rather than
// fail it.
func produceWithin(t *testing.T, cl *kgo.Client, d time.Duration, r *kgo.Record) error {
	t.Helper()
	done := make(chan error, 1)
	cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("no acknowledgement after %v", d)
	}
}

// internalAddr is broker id's INTERNAL listener.
func (tc *testCluster) internalAddr(id int32) string { return tc.brokers[id-1].Addrs()[1] }

// Three brokers replicate and complete transactions over a SASL_SSL
// inter-broker listener with the authorizer on, their principal a super
// user: acks=all with min.insync.replicas=3 succeeds only once both
// followers have fetched, every replica ends with the same batches, and a
// transaction over partitions led by all three brokers commits (its
// markers and KIP-890 checks go broker to broker) and is read back
// read_committed.
func TestInterBrokerSASLSSLReplicatesAndCommitsTransactions(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "client"})
	keystore, truststore := pki.Files(t)
	etcd := etcdtest.Start(t)
	createScramUser(t, etcd, brokerUser, brokerPassword)
	common := saslSSLProps(keystore, truststore, brokerUser, brokerPassword)
	common["super.users"] = "User:" + brokerUser + ";User:ANONYMOUS"
	common["transaction.state.log.num.partitions"] = "3"
	common["offsets.topic.num.partitions"] = "3"
	tc, logs := startSecureCluster(t, etcd, 3, common, nil)

	createTopicWith(t, tc, "secure", 3, 3, map[string]string{"min.insync.replicas": "3"})
	cl := newProducer(t, tc, kgo.RecordDeliveryTimeout(10*time.Second))
	ctx := testkit.Context(t, 60*time.Second)
	const n = 30
	for i := range n {
		r := &kgo.Record{Topic: "secure", Partition: int32(i % 3), Value: []byte(fmt.Sprint("v", i))}
		if err := produceWithin(t, cl, 15*time.Second, r); err != nil {
			t.Fatalf("acks=all record %d with min.insync.replicas=3: %v\nbroker logs:\n%s", i, err, logs[0].String()+logs[1].String()+logs[2].String())
		}
	}
	for p := int32(0); p < 3; p++ {
		var sums [3][][2]int64
		eventually(t, fmt.Sprintf("partition %d identical on all replicas", p), func() bool {
			for id := range 3 {
				sums[id] = batchSums(t, tc.brokers[id].Config().LogDirs[0], "secure", p)
			}
			return len(sums[0]) == n/3 && slices.Equal(sums[0], sums[1]) && slices.Equal(sums[0], sums[2])
		})
	}

	leadersOf := map[int32]bool{}
	for _, p := range partitionsOf(t, tc.addr(1), "secure") {
		leadersOf[p.Leader] = true
	}
	if len(leadersOf) != 3 {
		t.Fatalf("the partitions are led by %v, want all three brokers (the transaction must span them)", leadersOf)
	}
	txn := newProducer(t, tc, kgo.TransactionalID("secure-txn"), kgo.RecordDeliveryTimeout(10*time.Second))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if err := produceWithin(t, txn, 15*time.Second, &kgo.Record{Topic: "secure", Partition: p, Value: []byte(fmt.Sprint("txn", p))}); err != nil {
			t.Fatalf("transactional record to partition %d: %v", p, err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	consumer := testkit.Client(t, "", kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("secure"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	committed := 0
	for got := 0; got < n+3 && ctx.Err() == nil; {
		fs := consumer.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if strings.HasPrefix(string(r.Value), "txn") {
				committed++
			}
		})
	}
	if committed != 3 {
		t.Errorf("read_committed consumed %d of the 3 transactional records", committed)
	}
	for i, l := range logs {
		if s := l.String(); strings.Contains(s, brokerPassword) {
			t.Errorf("broker %d logged the inter-broker password", i+1)
		}
	}
}

// A broker whose inter-broker password is wrong is refused by the leader
// (SASL_AUTHENTICATION_FAILED): it never copies a record, leaves the ISR
// after replica.lag.time.max.ms and never rejoins it, and its log says
// that authentication to the other broker failed, without the password.
func TestInterBrokerWrongCredentialsNeverJoinTheISR(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "client"})
	keystore, truststore := pki.Files(t)
	etcd := etcdtest.Start(t)
	createScramUser(t, etcd, brokerUser, brokerPassword)
	common := saslSSLProps(keystore, truststore, brokerUser, brokerPassword)
	common["super.users"] = "User:" + brokerUser + ";User:ANONYMOUS"
	const wrong = "not-the-password"
	bad := saslSSLProps(keystore, truststore, brokerUser, wrong)
	tc, logs := startSecureCluster(t, etcd, 3, common, map[int32]config.Properties{3: bad})

	createAssignedTopic(t, tc, "guarded", []int32{1, 2, 3}, nil)
	cl := newProducer(t, tc, kgo.RecordDeliveryTimeout(10*time.Second))
	for i := range 5 {
		if err := produceWithin(t, cl, 15*time.Second, &kgo.Record{Topic: "guarded", Value: []byte(fmt.Sprint("v", i))}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	eventually(t, "broker 2 to copy every record", func() bool {
		return len(batchSums(t, tc.brokers[1].Config().LogDirs[0], "guarded", 0)) == 5
	})
	// Several lag periods: a follower that could fetch would be back.
	time.Sleep(3 * time.Second)
	if p := partitionsOf(t, tc.addr(1), "guarded")[0]; !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Errorf("ISR %v, want [1 2]: the broker with the wrong password must not be in sync", p.ISR)
	}
	if got := batchSums(t, tc.brokers[2].Config().LogDirs[0], "guarded", 0); len(got) != 0 {
		t.Errorf("the broker with the wrong password holds %d batches", len(got))
	}
	out := logs[2].String()
	if !strings.Contains(out, "authentication to another broker failed over the inter-broker listener") || !strings.Contains(out, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("broker 3's log does not say its authentication failed:\n%s", out)
	}
	if strings.Contains(out, wrong) || strings.Contains(out, brokerPassword) {
		t.Errorf("broker 3 logged a password")
	}
}

// A broker principal that is not allowed CLUSTER_ACTION on the cluster
// authenticates but gets nothing: the leader answers its follower Fetch
// and OffsetForLeaderEpoch with TOPIC_AUTHORIZATION_FAILED and
// WriteTxnMarkers with CLUSTER_AUTHORIZATION_FAILED, as Kafka, so the
// followers copy nothing and leave the ISR. Once an ACL allows
// User:broker CLUSTER_ACTION, they catch up and rejoin it.
func TestInterBrokerPrincipalNeedsClusterAction(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "client"})
	keystore, truststore := pki.Files(t)
	etcd := etcdtest.Start(t)
	createScramUser(t, etcd, brokerUser, brokerPassword)
	common := saslSSLProps(keystore, truststore, brokerUser, brokerPassword)
	common["super.users"] = "User:ANONYMOUS"
	tc, _ := startSecureCluster(t, etcd, 3, common, nil)

	createAssignedTopic(t, tc, "refused", []int32{1, 2, 3}, nil)
	cl := newProducer(t, tc, kgo.RecordDeliveryTimeout(10*time.Second))
	ctx := testkit.Context(t, 30*time.Second)
	if err := produceWithin(t, cl, 15*time.Second, &kgo.Record{Topic: "refused", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the followers out of the ISR", func() bool {
		return slices.Equal(partitionsOf(t, tc.addr(1), "refused")[0].ISR, []int32{1})
	})
	for id := 1; id < 3; id++ {
		if got := batchSums(t, tc.brokers[id].Config().LogDirs[0], "refused", 0); len(got) != 0 {
			t.Errorf("broker %d copied %d batches without CLUSTER_ACTION", id+1, len(got))
		}
	}

	// What the followers are told, asked the same way over the same
	// listener as the same principal.
	asBroker := testkit.Client(t, tc.internalAddr(1), kgo.DialTLSConfig(pki.ClientTLS(false)),
		kgo.SASL(scram.Auth{User: brokerUser, Pass: brokerPassword}.AsSha512Mechanism()))
	seed := asBroker.SeedBrokers()[0]
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = 2, 10, 1<<20
	fetch.ReplicaState.ID, fetch.ReplicaState.Epoch = 2, -1
	fetch.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "refused", topicID(t, tc.addr(1), "refused")
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if resp, err := fetch.RequestWith(ctx, seed); err != nil {
		t.Fatalf("follower Fetch: %v", err)
	} else if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("follower Fetch without CLUSTER_ACTION: %+v, want TOPIC_AUTHORIZATION_FAILED", resp.Topics)
	}
	epoch := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epoch.ReplicaID = 2
	et := kmsg.NewOffsetForLeaderEpochRequestTopic()
	et.Topic = "refused"
	ep := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	ep.Partition, ep.CurrentLeaderEpoch, ep.LeaderEpoch = 0, -1, 0
	et.Partitions = append(et.Partitions, ep)
	epoch.Topics = append(epoch.Topics, et)
	if resp, err := epoch.RequestWith(ctx, seed); err != nil {
		t.Fatalf("OffsetForLeaderEpoch: %v", err)
	} else if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("follower OffsetForLeaderEpoch without CLUSTER_ACTION: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	marker := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = 1000, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "refused", []int32{0}
	m.Topics = append(m.Topics, mt)
	marker.Markers = append(marker.Markers, m)
	if resp, err := marker.RequestWith(ctx, seed); err != nil {
		t.Fatalf("WriteTxnMarkers: %v", err)
	} else if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("WriteTxnMarkers without CLUSTER_ACTION: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}

	// Allowed, the followers catch up and are back in sync.
	acl := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+brokerUser, "*", kmsg.ACLOperationClusterAction, kmsg.ACLPermissionTypeAllow
	acl.Creations = append(acl.Creations, c)
	if resp := send[*kmsg.CreateACLsResponse](t, tc.addr(1), acl); resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateACLs: %v", kerr.ErrorForCode(resp.Results[0].ErrorCode))
	}
	eventually(t, "the followers back in the ISR", func() bool {
		isr := slices.Sorted(slices.Values(partitionsOf(t, tc.addr(1), "refused")[0].ISR))
		return slices.Equal(isr, []int32{1, 2, 3})
	})
	for id := 1; id < 3; id++ {
		if got := batchSums(t, tc.brokers[id].Config().LogDirs[0], "refused", 0); len(got) != 1 {
			t.Errorf("broker %d holds %d batches once allowed, want 1", id+1, len(got))
		}
	}
}

// topicID is the topic's id from the broker's metadata.
func topicID(t *testing.T, addr, topic string) [16]byte {
	t.Helper()
	return metadata(t, addr, topic).Topics[0].TopicID
}

// The settings of the inter-broker clients that Kafka refuses, or kbroker
// cannot honour, stop a clustered broker at startup with a message that
// says which key to change, and never the password.
func TestInterBrokerSecurityMisconfigurationFailsStartup(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "client"})
	keystore, truststore := pki.Files(t)
	etcd := etcdtest.Start(t)
	for _, c := range []struct {
		name   string
		change func(config.Properties)
		want   string
	}{
		{"GSSAPI, Kafka's default", func(p config.Properties) { delete(p, "sasl.mechanism.inter.broker.protocol") },
			"sasl.mechanism.inter.broker.protocol is GSSAPI, which kbroker does not implement"},
		{"a mechanism the listener does not enable", func(p config.Properties) { p["sasl.mechanism.inter.broker.protocol"] = "PLAIN" },
			"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"},
		{"both listener keys", func(p config.Properties) { p["security.inter.broker.protocol"] = "SASL_SSL" },
			"Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."},
		{"no credentials", func(p config.Properties) { delete(p, "listener.name.internal.scram-sha-512.sasl.jaas.config") },
			"listener.name.internal.scram-sha-512.sasl.jaas.config"},
		{"a JAAS line without username", func(p config.Properties) {
			p["listener.name.internal.scram-sha-512.sasl.jaas.config"] = auth.ScramLoginModule + ` required password="` + brokerPassword + `";`
		}, "no username and password options"},
		{"an unknown host name check", func(p config.Properties) { p["ssl.endpoint.identification.algorithm"] = "ldaps" },
			"ssl.endpoint.identification.algorithm ldaps is not supported"},
	} {
		props := clusterProps(etcd, 1)
		for k, v := range saslSSLProps(keystore, truststore, brokerUser, brokerPassword) {
			props[k] = v
		}
		c.change(props)
		err := startErr(t, props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: start error %v, want one saying %q", c.name, err, c.want)
		} else if strings.Contains(err.Error(), brokerPassword) {
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}
}

// mTLS between brokers: an SSL inter-broker listener with
// ssl.client.auth=required, where each broker presents its key store's
// certificate and is User:CN=broker, allowed CLUSTER_ACTION by an ACL (not
// a super user). acks=all with min.insync.replicas=3 succeeds and every
// replica has the records.
func TestInterBrokerMutualTLSReplicates(t *testing.T) {
	keystore, truststore := testpki.New(t, pkix.Name{CommonName: "client"}).Files(t)
	etcd := etcdtest.Start(t)
	common := config.Properties{
		"listeners":                                      "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map":                 "CLIENT:PLAINTEXT,INTERNAL:SSL",
		"inter.broker.listener.name":                     "INTERNAL",
		"listener.name.internal.ssl.keystore.location":   keystore,
		"listener.name.internal.ssl.truststore.location": truststore,
		"listener.name.internal.ssl.client.auth":         "required",
		"authorizer.class.name":                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                    "User:ANONYMOUS",
	}
	tc, logs := startSecureCluster(t, etcd, 3, common, nil)
	acl := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:CN=broker", "*", kmsg.ACLOperationClusterAction, kmsg.ACLPermissionTypeAllow
	acl.Creations = append(acl.Creations, c)
	if resp := send[*kmsg.CreateACLsResponse](t, tc.addr(1), acl); resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateACLs: %v", kerr.ErrorForCode(resp.Results[0].ErrorCode))
	}
	createAssignedTopic(t, tc, "mtls", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "3"})
	cl := newProducer(t, tc, kgo.RecordDeliveryTimeout(10*time.Second))
	for i := range 5 {
		if err := produceWithin(t, cl, 15*time.Second, &kgo.Record{Topic: "mtls", Value: []byte(fmt.Sprint("v", i))}); err != nil {
			t.Fatalf("acks=all record %d with min.insync.replicas=3: %v\nbroker 2's log:\n%s", i, err, logs[1].String())
		}
	}
	eventually(t, "every replica to hold the records", func() bool {
		a := batchSums(t, tc.brokers[0].Config().LogDirs[0], "mtls", 0)
		return len(a) == 5 && slices.Equal(a, batchSums(t, tc.brokers[1].Config().LogDirs[0], "mtls", 0)) &&
			slices.Equal(a, batchSums(t, tc.brokers[2].Config().LogDirs[0], "mtls", 0))
	})
}
