package admin_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

// TestGroupConfigsRoundTrip: a group's configs are set before the group
// exists, described with their source, refused out of the broker's
// limits, and the group is listed by ListConfigResources.
func TestGroupConfigsRoundTrip(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		res := admin.GroupResource("payments")
		rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{
			res: {admin.Set("consumer.session.timeout.ms", "50000")},
		}, admin.AlterOptions{Incremental: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.All(); err != nil {
			t.Fatal(err)
		}
		e := entry(t, describeOne(t, c, res, admin.DescribeOptions{IncludeSynonyms: true}), "consumer.session.timeout.ms")
		if e.ValueString() != "50000" {
			t.Fatalf("consumer.session.timeout.ms = %+v", e)
		}
		if tg.kfake {
			return // kfake checks no bounds and lists groups its own way
		}
		if e.Source != admin.SourceDynamicGroupConfig || len(e.Synonyms) != 2 || e.Synonyms[1].Name != "group.consumer.session.timeout.ms" {
			t.Fatalf("consumer.session.timeout.ms = %+v", e)
		}
		rs, err = c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{
			res: {admin.Set("consumer.session.timeout.ms", "90000")},
		}, admin.AlterOptions{Incremental: true})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, rs.All(), kerr.InvalidConfig)

		listed, err := c.ListConfigResources(ctxT(t), admin.ResourceGroup)
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != 1 || listed[0] != res {
			t.Fatalf("ListConfigResources(GROUP) = %+v, want %v", listed, res)
		}
		if s := listed[0].String(); s != "GROUP payments" {
			t.Fatalf("String() = %q", s)
		}
	})
}
