package admin_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

func TestTopicsCreateDescribeAddPartitionsDelete(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "a", Partitions: 2, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact"}},
			admin.NewTopic{Name: "b", Partitions: 1, ReplicationFactor: 1})
		rs, err := c.CreateTopics(ctxT(t), []admin.NewTopic{{Name: "a", Partitions: 1, ReplicationFactor: 1}}, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, rs.All(), kerr.TopicAlreadyExists)

		names, err := c.ListTopics(ctxT(t), false)
		if err != nil || !slices.Equal(names, []string{"a", "b"}) {
			t.Fatalf("ListTopics = %v, %v", names, err)
		}
		ds, err := c.DescribeTopics(ctxT(t), "a")
		if err != nil || len(ds) != 1 || len(ds[0].Partitions) != 2 || ds[0].ReplicationFactor() != 1 || ds[0].ID == "" {
			t.Fatalf("DescribeTopics(a) = %+v, %v", ds, err)
		}
		if e := entry(t, describeOne(t, c, admin.TopicResource("a"), admin.DescribeOptions{}), "cleanup.policy"); e.ValueString() != "compact" {
			t.Fatalf("created with cleanup.policy %q", e.ValueString())
		}
		missing, err := c.DescribeTopics(ctxT(t), "nope")
		if err != nil || len(missing) != 1 {
			t.Fatalf("DescribeTopics(nope) = %+v, %v", missing, err)
		}
		wantCode(t, missing[0].Err, kerr.UnknownTopicOrPartition)

		prs, err := c.CreatePartitions(ctxT(t), map[string]int32{"a": 5}, false)
		if err != nil || prs.All() != nil {
			t.Fatal(err, prs.All())
		}
		if ds, _ := c.DescribeTopics(ctxT(t), "a"); len(ds[0].Partitions) != 5 {
			t.Fatalf("a has %d partitions after CreatePartitions", len(ds[0].Partitions))
		}
		prs, err = c.CreatePartitions(ctxT(t), map[string]int32{"a": 2}, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, prs.All(), kerr.InvalidPartitions)

		drs, err := c.DeleteTopics(ctxT(t), "b", "nope")
		if err != nil {
			t.Fatal(err)
		}
		if drs[0].Err != nil {
			t.Fatal(drs[0].Err)
		}
		wantCode(t, drs[1].Err, kerr.UnknownTopicOrPartition)
		if names, _ := c.ListTopics(ctxT(t), false); !slices.Equal(names, []string{"a"}) {
			t.Fatalf("after delete: %v", names)
		}
	})
}
