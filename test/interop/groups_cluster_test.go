package interop

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/group"
	"kbroker/internal/testkit"
)

// In a 2-broker cluster on etcd, a group's coordinator is the leader of its
// `__consumer_offsets` partition, and FindCoordinator on either broker names
// that broker; a commit sent to the other one gets NOT_COORDINATOR; a group
// consumer bootstrapped from the broker that is not its coordinator commits,
// and both brokers route an OffsetFetch to the offsets it committed.
func TestGroupCoordinatorInATwoBrokerCluster(t *testing.T) {
	etcd := etcdtest.Start(t)
	const offsetsPartitions = 6
	var brokers []*broker.Broker
	for id := 1; id <= 2; id++ {
		brokers = append(brokers, brokertest.Start(t, config.Properties{
			"node.id":                          strconv.Itoa(id),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
			"metadata.etcd.request.timeout.ms": "1000",
			"offsets.topic.num.partitions":     strconv.Itoa(offsetsPartitions),
			"group.initial.rebalance.delay.ms": "0",
		}))
	}
	addr := func(id int32) string { return brokers[id-1].Addr() }
	adm := newAdmin(t, addr(1))
	testkit.CreateTopic(t, adm, "orders", 2, nil)
	produceN(t, addr(1), "orders", 0, 100)

	// findCoordinator asks exactly the broker at at (FindCoordinator v4,
	// batched keys) and returns each group's coordinator node id.
	findCoordinator := func(at string, groups ...string) map[string]int32 {
		t.Helper()
		cl := testkit.Client(t, at, kgo.RetryTimeout(time.Second))
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 4
		req.CoordinatorKeys = groups
		resp, err := cl.SeedBrokers()[0].Request(testkit.Context(t, 10*time.Second), req)
		if err != nil {
			t.Fatalf("FindCoordinator to %s: %v", at, err)
		}
		out := map[string]int32{}
		for _, c := range resp.(*kmsg.FindCoordinatorResponse).Coordinators {
			out[c.Key] = -1
			if c.ErrorCode == 0 {
				out[c.Key] = c.NodeID
			}
		}
		return out
	}
	var groups []string
	for i := range 24 {
		groups = append(groups, fmt.Sprintf("cg-%d", i))
	}
	// The first FindCoordinator creates __consumer_offsets; both brokers
	// then need to have seen it (each follows etcd) and loaded their
	// partitions.
	leaderOf := map[int32]int32{}
	if !testkit.WaitFor(20*time.Second, func() bool {
		md, err := adm.Metadata(testkit.Context(t, 5*time.Second), group.Topic)
		if err != nil || md.Topics[group.Topic].Err != nil || len(md.Topics[group.Topic].Partitions) != offsetsPartitions {
			findCoordinator(addr(1), groups[0])
			return false
		}
		for p, pd := range md.Topics[group.Topic].Partitions {
			leaderOf[p] = pd.Leader
		}
		a, b := findCoordinator(addr(1), groups...), findCoordinator(addr(2), groups...)
		for _, g := range groups {
			if a[g] == -1 || b[g] == -1 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("__consumer_offsets never became available on both brokers (leaders %v)", leaderOf)
	}
	byCoordinator := map[int32][]string{}
	for _, at := range []int32{1, 2} {
		got := findCoordinator(addr(at), groups...)
		for _, g := range groups {
			want := leaderOf[group.Partition(g, offsetsPartitions)]
			if got[g] != want {
				t.Errorf("FindCoordinator on broker %d names %d for %s, want %d (leader of __consumer_offsets-%d)",
					at, got[g], g, want, group.Partition(g, offsetsPartitions))
			}
			if at == 1 {
				byCoordinator[want] = append(byCoordinator[want], g)
			}
		}
	}
	if len(byCoordinator[1]) == 0 || len(byCoordinator[2]) == 0 {
		t.Fatalf("groups by coordinator %v: want some on each broker (__consumer_offsets leaders %v)", byCoordinator, leaderOf)
	}

	// A group coordinated by broker 2, consumed by a member that only
	// knows broker 1.
	g := byCoordinator[2][0]
	wrong := kmsg.NewPtrOffsetCommitRequest()
	wrong.Version, wrong.Group, wrong.Generation = 8, g, -1
	wt := kmsg.NewOffsetCommitRequestTopic()
	wt.Topic = "orders"
	wp := kmsg.NewOffsetCommitRequestTopicPartition()
	wp.Partition, wp.Offset = 0, 1
	wt.Partitions = append(wt.Partitions, wp)
	wrong.Topics = append(wrong.Topics, wt)
	resp, err := testkit.Client(t, addr(1)).SeedBrokers()[0].Request(testkit.Context(t, 10*time.Second), wrong)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetCommit of %s sent to broker 1 (not its coordinator): %v, want NOT_COORDINATOR", g, kerr.ErrorForCode(code))
	}

	seen := groupConsume(t, addr(1), "orders", g, 1, 100, kgo.CooperativeStickyBalancer())
	if len(seen) != 100 {
		t.Fatalf("the group member saw %d distinct values, want 100", len(seen))
	}
	for _, at := range []int32{1, 2} {
		if got := committedTotal(t, kadm.NewClient(testkit.Client(t, addr(at))), g, "orders"); got != 100 {
			t.Errorf("bootstrapped from broker %d, group %s's committed offsets sum to %d, want 100", at, g, got)
		}
	}
}
