package admin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
	"kbroker/broker"
	"kbroker/internal/config"
)

// exampleBroker runs an in-process kbroker on a free loopback port, so the
// examples run as they are; against a real cluster, use its address.
func exampleBroker(extra config.Properties) (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "kbroker-example")
	if err != nil {
		panic(err)
	}
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	for k, v := range extra {
		props[k] = v
	}
	b, err := broker.New(props)
	if err == nil {
		err = b.Start()
	}
	if err != nil {
		panic(err)
	}
	return b.Addr(), func() { b.Close(); os.RemoveAll(dir) }
}

func Example() {
	addr, stop := exampleBroker(nil)
	defer stop()

	adm, err := admin.New(kgo.SeedBrokers(addr))
	if err != nil {
		panic(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	created, err := adm.CreateTopics(ctx, []admin.NewTopic{{Name: "orders", Partitions: 3, ReplicationFactor: 1,
		Configs: map[string]string{"retention.ms": "3600000"}}}, false)
	if err != nil {
		panic(err)
	}
	if err := created.All(); err != nil {
		panic(err)
	}
	res := admin.TopicResource("orders")
	described, err := adm.DescribeConfigs(ctx, []admin.ConfigResource{res}, admin.DescribeOptions{Keys: []string{"retention.ms"}})
	if err != nil {
		panic(err)
	}
	configs, err := described.All()
	if err != nil {
		panic(err)
	}
	for _, e := range configs[res] {
		fmt.Printf("%s=%s (%s)\n", e.Name, e.ValueString(), e.Source)
	}
	// Output:
	// retention.ms=3600000 (DYNAMIC_TOPIC_CONFIG)
}

func ExampleClient_DescribeConfigs() {
	addr, stop := exampleBroker(config.Properties{"log.retention.hours": "100"})
	defer stop()
	adm, _ := admin.New(kgo.SeedBrokers(addr))
	defer adm.Close()

	// Broker 1's log.retention.hours, with every place that sets it.
	rs, err := adm.DescribeConfigs(context.Background(), []admin.ConfigResource{admin.BrokerResource(1)},
		admin.DescribeOptions{IncludeSynonyms: true, Keys: []string{"log.retention.hours"}})
	if err != nil {
		panic(err)
	}
	for _, e := range rs[0].Entries {
		fmt.Println(e.Name, e.ValueString(), e.Source, e.Type)
		for _, s := range e.Synonyms {
			fmt.Printf("  %s:%s=%s\n", s.Source, s.Name, admin.ConfigEntry{Value: s.Value}.ValueString())
		}
	}
	// Output:
	// log.retention.hours 100 STATIC_BROKER_CONFIG INT
	//   STATIC_BROKER_CONFIG:log.retention.hours=100
	//   DEFAULT_CONFIG:log.retention.hours=168
}

func ExampleClient_AlterConfigs() {
	addr, stop := exampleBroker(nil)
	defer stop()
	adm, _ := admin.New(kgo.SeedBrokers(addr))
	defer adm.Close()
	ctx := context.Background()
	adm.CreateTopics(ctx, []admin.NewTopic{{Name: "t", Partitions: 1, ReplicationFactor: 1}}, false)

	rs, err := adm.AlterConfigs(ctx, map[admin.ConfigResource][]admin.ConfigChange{
		admin.TopicResource("t"):       {admin.Append("cleanup.policy", "compact"), admin.Delete("retention.ms")},
		admin.TopicResource("missing"): {admin.Set("retention.ms", "1000")},
	}, admin.AlterOptions{Incremental: true})
	if err != nil {
		panic(err) // the request as a whole failed
	}
	for _, r := range rs {
		fmt.Println(r.Resource, "→", r.Err)
	}
	fmt.Println(errors.Is(rs.All(), kerr.UnknownTopicOrPartition))
	// Output:
	// TOPIC missing → TOPIC missing: UNKNOWN_TOPIC_OR_PARTITION: The topic 'missing' does not exist.
	// TOPIC t → <nil>
	// true
}

func ExampleClient_AlterClientQuotas() {
	addr, stop := exampleBroker(nil)
	defer stop()
	adm, _ := admin.New(kgo.SeedBrokers(addr))
	defer adm.Close()
	ctx := context.Background()

	// user1 may produce 1 KiB/s from clientA, and any client-id 4 KiB/s.
	adm.AlterClientQuotas(ctx, []admin.QuotaAlteration{
		{Entity: admin.UserClientEntity("user1", "clientA"), Ops: []admin.QuotaOp{{Key: "producer_byte_rate", Value: 1024}}},
		{Entity: admin.UserEntity("user1"), Ops: []admin.QuotaOp{{Key: "producer_byte_rate", Value: 4096}}},
	}, false)
	entries, err := adm.DescribeClientQuotas(ctx, admin.QuotaFilter{Components: []admin.QuotaFilterComponent{
		{EntityType: admin.EntityUser, Match: admin.MatchExact, Name: "user1"}}})
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Println(e.Entity, e.Values)
	}
	// Output:
	// user-principal 'user1' map[producer_byte_rate:4096]
	// user-principal 'user1', client-id 'clientA' map[producer_byte_rate:1024]
}

func ExampleClient_AlterUserScramCredentials() {
	addr, stop := exampleBroker(nil)
	defer stop()
	adm, _ := admin.New(kgo.SeedBrokers(addr))
	defer adm.Close()
	ctx := context.Background()

	// The password is salted and hashed here; only the result is sent.
	rs, err := adm.AlterUserScramCredentials(ctx, []admin.ScramUpsertion{
		{User: "alice", Mechanism: admin.ScramSHA256, Iterations: 8192, Password: "alice-secret"},
	}, nil)
	if err != nil || rs.All() != nil {
		panic(fmt.Sprint(err, rs.All()))
	}
	users, _ := adm.DescribeUserScramCredentials(ctx)
	for _, u := range users {
		fmt.Println(u.User, u.Credentials)
	}
	// Output:
	// alice [{SCRAM-SHA-256 8192}]
}

// ACLs need a broker with an authorizer; without one the ACL APIs answer
// SECURITY_DISABLED.
func ExampleClient_CreateACLs() {
	addr, stop := exampleBroker(config.Properties{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})
	defer stop()
	adm, _ := admin.New(kgo.SeedBrokers(addr))
	defer adm.Close()
	ctx := context.Background()

	rs, err := adm.CreateACLs(ctx, []admin.ACLBinding{{
		ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders-", PatternType: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow,
	}})
	if err != nil || rs.All() != nil {
		panic(fmt.Sprint(err, rs.All()))
	}
	// Which ACLs apply to topic orders-eu?
	f := admin.AnyACL()
	f.ResourceType, f.ResourceName, f.PatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("orders-eu"), kmsg.ACLResourcePatternTypeMatch
	acls, _ := adm.DescribeACLs(ctx, f)
	for _, a := range acls {
		fmt.Println(a)
	}
	// Output:
	// ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED) (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
}
