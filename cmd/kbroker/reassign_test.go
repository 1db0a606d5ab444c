package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

// startEtcdCluster runs n brokers on one embedded etcd and returns the
// --bootstrap-server flags.
func startEtcdCluster(t *testing.T, n int) []string {
	t.Helper()
	etcd := etcdtest.Start(t)
	var addrs []string
	for id := 1; id <= n; id++ {
		b := brokertest.Start(t, config.Properties{
			"node.id": strconv.Itoa(id), "metadata.etcd.endpoints": etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000", "metadata.etcd.request.timeout.ms": "1000",
			"auto.leader.rebalance.enable": "false",
		})
		addrs = append(addrs, b.Addr())
	}
	return []string{"--bootstrap-server", strings.Join(addrs, ",")}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kbroker reassign and leader-election on three brokers, shaped like
// kafka-reassign-partitions.sh and kafka-leader-election.sh: --generate
// proposes replicas on the brokers listed, --execute prints the rollback
// plan and starts the plan (--throttle setting the replication throttles
// first), --verify reports completion (exit 1 until then) and then
// removes the throttles, --cancel of a finished reassignment fails with Kafka's error; a
// reordered partition gets its new first replica as leader from a
// PREFERRED election, and a partition already led by it is reported so.
func TestReassignAndLeaderElectionCommands(t *testing.T) {
	bs := startEtcdCluster(t, 3)
	cl := testkit.Client(t, "", kgo.SeedBrokers(strings.Split(bs[1], ",")...))
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "mv", -1, -1
	for p, replicas := range [][]int32{{1, 2}, {2, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating mv: %v %+v", err, resp)
	}

	moveFile := writeFile(t, "move.json", `{"version":1,"topics":[{"topic":"mv"}]}`)
	out := ok(t, args(bs, "reassign", "--generate", "--topics-to-move-json-file", moveFile, "--broker-list", "2,3")...)
	current, proposed, found := strings.Cut(out, "\nProposed partition reassignment configuration\n")
	wantCurrent := "Current partition replica assignment\n" + `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"mv","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}]}` + "\n"
	if !found || current != wantCurrent {
		t.Fatalf("--generate printed:\n%s", out)
	}
	var plan admin.ReassignmentPlan
	if err := json.Unmarshal([]byte(proposed), &plan); err != nil || len(plan.Partitions) != 2 {
		t.Fatalf("proposed plan %q: %v", proposed, err)
	}
	for _, p := range plan.Partitions {
		if sorted := slices.Sorted(slices.Values(p.Replicas)); !slices.Equal(sorted, []int32{2, 3}) {
			t.Errorf("proposed %s on %v, want brokers 2 and 3", p.Name(), p.Replicas)
		}
	}

	planFile := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[2,3]},{"topic":"mv","partition":1,"replicas":[3,2]}]}`)
	wantOutput(t, ok(t, args(bs, "reassign", "--execute", "--reassignment-json-file", planFile, "--throttle", "100000000")...),
		"Current partition replica assignment\n\n"+
			`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"mv","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}]}`+"\n\n"+
			"Save this to use as the --reassignment-json-file option during rollback\n"+
			"Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\n"+
			"The inter-broker throttle limit was set to 100000000 B/s\n"+
			"Successfully started partition reassignments for mv-0,mv-1\n")
	// --throttle throttles the current replicas as leaders and the added
	// ones as followers, at the rate on every broker involved.
	wantThrottles(t, cl, map[string]string{
		"mv": "leader.replication.throttled.replicas=0:1,0:2,1:2,1:1 follower.replication.throttled.replicas=0:3,1:3",
		"1":  "leader.replication.throttled.rate=100000000 follower.replication.throttled.rate=100000000",
		"3":  "leader.replication.throttled.rate=100000000 follower.replication.throttled.rate=100000000",
	})
	var verify result
	if !testkit.WaitFor(30*time.Second, func() bool {
		verify = kb(t, args(bs, "reassign", "--verify", "--reassignment-json-file", planFile)...)
		return verify.code == 0
	}) {
		t.Fatalf("--verify never reported completion: %+v", verify)
	}
	wantOutput(t, verify.stdout, "Status of partition reassignment:\nReassignment of partition mv-0 is completed.\nReassignment of partition mv-1 is completed.\n"+
		"\nClearing broker-level throttles on brokers 1,2,3\nClearing topic-level throttles on topics mv\n")
	wantThrottles(t, cl, map[string]string{"mv": "", "1": "", "3": ""})
	if r := kb(t, args(bs, "reassign", "--verify", "--reassignment-json-file", planFile, "--throttle", "5")...); r.code != 2 || !strings.Contains(r.stderr, "--throttle is only for --execute") {
		t.Errorf("--verify --throttle: %+v", r)
	}
	r := kb(t, args(bs, "reassign", "--cancel", "--reassignment-json-file", planFile)...)
	if r.code != 1 || !strings.Contains(r.stderr, "mv-0: "+kerr.NoReassignmentInProgress.Message) {
		t.Errorf("--cancel of finished reassignments: %+v", r)
	}

	// mv-0 is led by 2, its first replica (1, its leader, left): nothing
	// to elect. mv-1 kept its leader 2, now its second replica; mv-0
	// reordered to 3,2 has 3 as preferred leader: both are elected.
	wantOutput(t, ok(t, args(bs, "leader-election", "--election-type", "PREFERRED", "--topic", "mv", "--partition", "0")...),
		"Valid replica already elected for partitions mv-0\n")
	reorder := writeFile(t, "reorder.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[3,2]}]}`)
	ok(t, args(bs, "reassign", "--execute", "--reassignment-json-file", reorder)...)
	wantOutput(t, ok(t, args(bs, "leader-election", "--election-type", "PREFERRED", "--all-topic-partitions")...),
		"Successfully completed leader election (PREFERRED) for partitions mv-0, mv-1\n")
	r = kb(t, args(bs, "leader-election", "--election-type", "UNCLEAN", "--topic", "nope", "--partition", "0")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Error completing leader election (UNCLEAN) for partition: nope-0: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("election of an unknown topic: %+v", r)
	}
	if r := kb(t, args(bs, "leader-election", "--topic", "mv", "--partition", "0")...); r.code != 2 || !strings.Contains(r.stderr, "election-type") {
		t.Errorf("without --election-type: %+v", r)
	}
}

// SIGTERM to a "kbroker serve" process of an etcd cluster: before it
// stops, its leaderships move to the other in-sync replicas (its log says
// so before "kbroker stopped"), and an acks=all producer writing to the
// partitions it led sees no error.
func TestSIGTERMHandsLeadershipOverBeforeStopping(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kbroker binary")
	}
	etcd := etcdtest.Start(t)
	var seeds []string
	for id := 1; id <= 2; id++ {
		b := brokertest.Start(t, config.Properties{
			"node.id": strconv.Itoa(id), "metadata.etcd.endpoints": etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000", "auto.leader.rebalance.enable": "false",
		})
		seeds = append(seeds, b.Addr())
	}
	proc := testbin.NewBroker(t, map[string]string{
		"node.id": "3", "metadata.etcd.endpoints": etcd.Endpoint(), "metadata.etcd.session.timeout.ms": "2000",
	})
	p := proc.Start(t)
	seeds = append(seeds, p.Addr)
	cl := testkit.Client(t, "", kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second))
	ctx := testkit.Context(t, 60*time.Second)
	if !testkit.WaitFor(20*time.Second, func() bool {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err == nil && len(resp.Brokers) == 3
	}) {
		t.Fatal("three brokers never registered")
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "roll", -1, -1
	for part, replicas := range [][]int32{{3, 1, 2}, {3, 2, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(part), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating roll: %v %+v", err, resp)
	}

	var produced, failed int
	produce := func(n int) {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "roll", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
				failed++
				t.Logf("produce: %v", err)
				continue
			}
			produced++
		}
	}
	produce(50)
	during := make(chan struct{})
	go func() {
		defer close(during)
		produce(100) // while broker 3 hands over and stops
	}()
	p.Stop(t, syscall.SIGTERM, 30*time.Second)
	<-during
	produce(50)
	if failed > 0 || produced != 200 {
		t.Errorf("%d of 200 acks=all produces failed across the SIGTERM", failed)
	}
	log, err := os.ReadFile(proc.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	handed := strings.Index(string(log), "controlled shutdown complete")
	if stop := strings.Index(string(log), "kbroker stopped"); handed < 0 || stop < handed {
		t.Errorf("broker 3's log does not show the handover before it stopped:\n%s", log)
	}
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range resp.Topics {
		for _, part := range topic.Partitions {
			if part.Leader == 3 || part.Leader < 0 {
				t.Errorf("%s-%d led by %d after broker 3 stopped", *topic.Topic, part.Partition, part.Leader)
			}
		}
	}
}

// wantThrottles checks the dynamic configs of the replication throttles on
// topics and brokers (named by id), as "key=value key=value" in the order
// wanted; "" wants none.
func wantThrottles(t *testing.T, cl *kgo.Client, want map[string]string) {
	t.Helper()
	adm := admin.NewFromClient(cl)
	for name, w := range want {
		res := admin.TopicResource(name)
		keys := []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
		if id, err := strconv.Atoi(name); err == nil {
			res = admin.BrokerResource(int32(id))
			keys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
		}
		got, err := adm.DescribeConfigs(testkit.Context(t, 10*time.Second), []admin.ConfigResource{res}, admin.DescribeOptions{})
		if err == nil {
			_, err = got.All()
		}
		rc, found := got.On(res)
		if err != nil || !found {
			t.Fatalf("describing %v: %v", res, err)
		}
		var set []string
		for _, k := range keys {
			for _, e := range rc.Entries {
				if e.Name == k && (e.Source == admin.SourceDynamicTopicConfig || e.Source == admin.SourceDynamicBrokerConfig) && e.Value != nil {
					set = append(set, k+"="+*e.Value)
				}
			}
		}
		if g := strings.Join(set, " "); g != w {
			t.Errorf("%v throttles: %q, want %q", res, g, w)
		}
	}
}
