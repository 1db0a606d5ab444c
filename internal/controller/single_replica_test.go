package controller_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/internal/testkit"
)

// A partition of one replica reassigned to another broker (1 → 2): broker
// 2 copies it as a follower, leads it alone once the reassignment
// completes, and from then on every append commits again, so consumers
// read the records produced after the move too.
func TestReassigningASingleReplicaToAnotherBroker(t *testing.T) {
	tc := startCluster(t, 2, nil, nil)
	tc.createTopic(t, "one", nil, []int32{1})
	ctx := testkit.Context(t, 30*time.Second)
	cl := testkit.Client(t, "", kgo.SeedBrokers(tc.addrs()...))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "one", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := tc.admin(t, 1)
	if res, err := adm.AlterPartitionReassignments(ctx, []admin.PartitionReplicas{{Topic: "one", Partition: 0, Replicas: []int32{2}}}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	eventually(t, "the partition on broker 2 alone", func() bool {
		p := partitionsOf(t, tc.broker(1).Addr(), "one")[0]
		return slices.Equal(p.Replicas, []int32{2}) && p.Leader == 2
	})
	pctx := testkit.Context(t, 5*time.Second)
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "one", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal("producing after the move:", err)
	}
	c2 := testkit.Client(t, "", kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("one"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	cctx := testkit.Context(t, 5*time.Second)
	for n < 2 && cctx.Err() == nil {
		n += c2.PollFetches(cctx).NumRecords()
	}
	if n != 2 {
		t.Fatalf("consumed %d of the 2 records produced before and after the move", n)
	}
}
