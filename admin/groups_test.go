package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
	"kbroker/internal/config"
)

// member joins group on topic, reads n records and commits them; it stays
// in the group until closed.
func member(t *testing.T, c *admin.Client, group, topic string, n int) *kgo.Client {
	t.Helper()
	addr := c.Kgo().OptValue(kgo.SeedBrokers).([]string)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond), kgo.ClientID("admin-test"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := ctxT(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollRecords(ctx, n-len(got))
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(got), n)
		}
		got = append(got, fs.Records()...)
	}
	if err := cl.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	return cl
}

func produce(t *testing.T, c *admin.Client, topic string, partition int32, n int) {
	t.Helper()
	addr := c.Kgo().OptValue(kgo.SeedBrokers).([]string)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func lagOf(t *testing.T, c *admin.Client, group string) string {
	t.Helper()
	gl, err := c.DescribeGroupLag(ctxT(t), group)
	if err != nil || gl.Err != nil {
		t.Fatal(err, gl.Err)
	}
	var rows []string
	for _, p := range gl.Partitions {
		rows = append(rows, fmt.Sprintf("%s:%d/%d/%d", p, p.CommittedOffset, p.LogEndOffset, p.Lag))
	}
	return strings.Join(rows, " ")
}

func TestGroupsListDescribeLagResetDelete(t *testing.T) {
	forEachTargetWith(t, config.Properties{"group.initial.rebalance.delay.ms": "0"}, func(t *testing.T, tg target, c *admin.Client) {
		skipUnlessAPI(t, c, int16(kmsg.DescribeGroups), "DescribeGroups")
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 2, ReplicationFactor: 1})
		produce(t, c, "t", 0, 4)
		produce(t, c, "t", 1, 2)
		m := member(t, c, "g", "t", 6)
		produce(t, c, "t", 0, 3)

		ls, err := c.ListGroups(ctxT(t), admin.ListGroupsFilter{})
		if err != nil || len(ls) != 1 || ls[0].Group != "g" || ls[0].State != admin.GroupStable || !ls[0].IsConsumerGroup() {
			t.Fatalf("ListGroups = %+v, %v", ls, err)
		}
		if ls, err := c.ListGroups(ctxT(t), admin.ListGroupsFilter{States: []string{"Empty"}}); err != nil || len(ls) != 0 {
			t.Fatalf("ListGroups(Empty) = %+v, %v", ls, err)
		}
		ds, err := c.DescribeGroups(ctxT(t), "g", "nope")
		if err != nil {
			t.Fatal(err)
		}
		if g := ds[0]; g.Err != nil || g.State != admin.GroupStable || g.ProtocolType != "consumer" || len(g.Members) != 1 ||
			len(g.Members[0].Assignment) != 2 || g.Members[0].ClientID != "admin-test" || g.Coordinator == nil {
			t.Fatalf("DescribeGroups(g) = %+v", g)
		}
		if ds[1].Exists() || ds[1].State != admin.GroupDead {
			t.Fatalf("DescribeGroups(nope) = %+v", ds[1])
		}
		if got := lagOf(t, c, "g"); got != "t-0:4/7/3 t-1:2/2/0" {
			t.Fatalf("lag %s", got)
		}

		// Kafka resets only groups without members.
		_, err = c.ResetGroupOffsets(ctxT(t), "g", admin.OffsetReset{To: admin.ResetToEarliest, Execute: true})
		wantCode(t, err, kerr.NonEmptyGroup)
		if !strings.Contains(err.Error(), "Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.") {
			t.Fatalf("refusal reads %q", err)
		}
		rs, err := c.DeleteGroups(ctxT(t), "g")
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, rs.All(), kerr.NonEmptyGroup)
		m.Close()

		plan, err := c.ResetGroupOffsets(ctxT(t), "g", admin.OffsetReset{To: admin.ResetShiftBy, Offset: -3})
		if err != nil || plan.Offsets[admin.TopicPartition{Topic: "t", Partition: 0}] != 1 ||
			plan.Offsets[admin.TopicPartition{Topic: "t", Partition: 1}] != 0 || len(plan.Warnings) != 1 {
			t.Fatalf("dry-run shift = %+v, %v", plan, err)
		}
		if got := lagOf(t, c, "g"); got != "t-0:4/7/3 t-1:2/2/0" {
			t.Fatalf("a dry run changed offsets: %s", got)
		}
		_, err = c.ResetGroupOffsets(ctxT(t), "g", admin.OffsetReset{To: admin.ResetToOffset, Offset: 5, Execute: true,
			Partitions: []admin.TopicPartition{{Topic: "t", Partition: 0}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := lagOf(t, c, "g"); got != "t-0:5/7/2 t-1:2/2/0" {
			t.Fatalf("after reset: %s", got)
		}
		_, err = c.ResetGroupOffsets(ctxT(t), "g", admin.OffsetReset{To: admin.ResetToLatest, Partitions: []admin.TopicPartition{{Topic: "t", Partition: 9}}})
		wantCode(t, err, kerr.UnknownTopicOrPartition)

		prs, err := c.DeleteGroupOffsets(ctxT(t), "g", []admin.TopicPartition{{Topic: "t", Partition: 1}})
		if err != nil || prs.All() != nil {
			t.Fatal(err, prs.All())
		}
		if got := lagOf(t, c, "g"); got != "t-0:5/7/2" {
			t.Fatalf("after OffsetDelete: %s", got)
		}
		if rs, err := c.DeleteGroups(ctxT(t), "g"); err != nil || rs.All() != nil {
			t.Fatal(err, rs.All())
		}
		if ls, err := c.ListGroups(ctxT(t), admin.ListGroupsFilter{}); err != nil || len(ls) != 0 {
			t.Fatalf("after delete: %+v %v", ls, err)
		}
		_, err = c.DeleteGroupOffsets(ctxT(t), "g", []admin.TopicPartition{{Topic: "t", Partition: 0}})
		wantCode(t, err, kerr.GroupIDNotFound)
	})
}

// A reset by time lands on the first record at or after it.
func TestGroupsResetToTime(t *testing.T) {
	forEachTargetWith(t, config.Properties{"group.initial.rebalance.delay.ms": "0"}, func(t *testing.T, tg target, c *admin.Client) {
		skipUnlessAPI(t, c, int16(kmsg.OffsetCommit), "OffsetCommit")
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1})
		addr := c.Kgo().OptValue(kgo.SeedBrokers).([]string)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		for i := 0; i < 5; i++ {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Timestamp: base.Add(time.Duration(i) * time.Minute)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		tp := admin.TopicPartition{Topic: "t", Partition: 0}
		plan, err := c.ResetGroupOffsets(ctxT(t), "fresh", admin.OffsetReset{To: admin.ResetToTime, Time: base.Add(90 * time.Second),
			Partitions: []admin.TopicPartition{tp}, Execute: true})
		if err != nil || plan.Offsets[tp] != 2 {
			t.Fatalf("reset to time = %+v, %v", plan, err)
		}
		co, err := c.CommittedOffsets(ctxT(t), "fresh")
		if err != nil || co[tp].Offset != 2 {
			t.Fatalf("committed %+v, %v", co, err)
		}
	})
}
