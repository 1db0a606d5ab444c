package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

func describeOne(t *testing.T, c *admin.Client, res admin.ConfigResource, opts admin.DescribeOptions) admin.ResourceConfigs {
	t.Helper()
	rs, err := c.DescribeConfigs(ctxT(t), []admin.ConfigResource{res}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Resource != res {
		t.Fatalf("results %+v, want one for %v", rs, res)
	}
	if rs[0].Err != nil {
		t.Fatal(rs[0].Err)
	}
	return rs[0]
}

func entry(t *testing.T, rc admin.ResourceConfigs, name string) admin.ConfigEntry {
	t.Helper()
	e, ok := rc.Entry(name)
	if !ok {
		t.Fatalf("%v has no config %s", rc.Resource, name)
	}
	return e
}

func TestDescribeConfigsReportsOverrideWithSynonyms(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}})
		rc := describeOne(t, c, admin.TopicResource("t"), admin.DescribeOptions{IncludeSynonyms: true})
		e := entry(t, rc, "retention.ms")
		if e.ValueString() != "1000" || e.Source != admin.SourceDynamicTopicConfig || e.IsDefault || e.IsSensitive || e.IsReadOnly {
			t.Fatalf("retention.ms = %+v", e)
		}
		if tg.kfake {
			return // kfake lists only the default as a synonym
		}
		if len(e.Synonyms) == 0 || e.Synonyms[0].Source != admin.SourceDynamicTopicConfig || strOf(e.Synonyms[0].Value) != "1000" {
			t.Fatalf("synonyms = %+v, want the topic override first", e.Synonyms)
		}
		if d := entry(t, rc, "cleanup.policy"); d.Source == admin.SourceDynamicTopicConfig {
			t.Fatalf("cleanup.policy = %+v, want an inherited value", d)
		}
		if e.Type != admin.TypeLong {
			t.Fatalf("retention.ms type %v, want LONG", e.Type)
		}
		doc := describeOne(t, c, admin.TopicResource("t"), admin.DescribeOptions{IncludeDocumentation: true, Keys: []string{"retention.ms"}})
		if len(doc.Entries) != 1 || doc.Entries[0].Documentation == nil || *doc.Entries[0].Documentation == "" {
			t.Fatalf("documented describe of one key = %+v", doc.Entries)
		}
	})
}

func strOf(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestIncrementalAlterSetsDeletesAppendsAndSubtracts(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}})
		res := admin.TopicResource("t")
		alter := func(changes ...admin.ConfigChange) {
			t.Helper()
			rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{res: changes}, admin.AlterOptions{Incremental: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := rs.All(); err != nil {
				t.Fatal(err)
			}
		}
		alter(admin.Set("cleanup.policy", "compact"), admin.Delete("retention.ms"))
		rc := describeOne(t, c, res, admin.DescribeOptions{})
		if e := entry(t, rc, "retention.ms"); e.Source == admin.SourceDynamicTopicConfig {
			t.Fatalf("retention.ms still overridden: %+v", e)
		}
		if e := entry(t, rc, "cleanup.policy"); e.ValueString() != "compact" {
			t.Fatalf("cleanup.policy = %+v", e)
		}
		alter(admin.Append("cleanup.policy", "delete"))
		if e := entry(t, describeOne(t, c, res, admin.DescribeOptions{}), "cleanup.policy"); e.ValueString() != "compact,delete" {
			t.Fatalf("after append cleanup.policy = %q", e.ValueString())
		}
		alter(admin.Subtract("cleanup.policy", "compact"))
		if e := entry(t, describeOne(t, c, res, admin.DescribeOptions{}), "cleanup.policy"); e.ValueString() != "delete" {
			t.Fatalf("after subtract cleanup.policy = %q", e.ValueString())
		}
	})
}

func TestAlterConfigsWithoutIncrementalReplacesEveryOverride(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1,
			Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}})
		res := admin.TopicResource("t")
		rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{res: {admin.Set("segment.ms", "60000")}}, admin.AlterOptions{})
		if err != nil || rs.All() != nil {
			t.Fatal(err, rs.All())
		}
		rc := describeOne(t, c, res, admin.DescribeOptions{})
		var dynamic []string
		for _, e := range rc.Entries {
			if e.Source == admin.SourceDynamicTopicConfig {
				dynamic = append(dynamic, e.Name+"="+e.ValueString())
			}
		}
		if strings.Join(dynamic, ",") != "segment.ms=60000" {
			t.Fatalf("overrides after replacement: %v", dynamic)
		}

		// A Delete makes no sense in a full replacement: refused before sending.
		rs, err = c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{res: {admin.Delete("segment.ms")}}, admin.AlterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, rs.All(), kerr.InvalidRequest)
	})
}

func TestValidateOnlyChangesNothing(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1})
		res := admin.TopicResource("t")
		for _, inc := range []bool{true, false} {
			rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{res: {admin.Set("retention.ms", "5")}},
				admin.AlterOptions{ValidateOnly: true, Incremental: inc})
			if err != nil || rs.All() != nil {
				t.Fatal(err, rs.All())
			}
		}
		if e := entry(t, describeOne(t, c, res, admin.DescribeOptions{}), "retention.ms"); e.ValueString() == "5" {
			t.Fatalf("validate-only changed retention.ms: %+v", e)
		}
	})
}

func TestAlterErrorsArePerResourceWithTheBrokersMessage(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "good", Partitions: 1, ReplicationFactor: 1}, admin.NewTopic{Name: "bad", Partitions: 1, ReplicationFactor: 1})
		bad := admin.Set("retention.ms", "not-a-number")
		if tg.kfake {
			bad = admin.Append("retention.ms", "1") // kfake validates ops, not names or values
		}
		rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{
			admin.TopicResource("good"): {admin.Set("retention.ms", "7")},
			admin.TopicResource("bad"):  {bad},
		}, admin.AlterOptions{Incremental: true})
		if err != nil {
			t.Fatal(err)
		}
		good, _ := rs.On(admin.TopicResource("good"))
		failed, _ := rs.On(admin.TopicResource("bad"))
		if good.Err != nil {
			t.Fatalf("good topic failed: %v", good.Err)
		}
		want := kerr.InvalidConfig
		if tg.kfake {
			want = kerr.InvalidRequest // kfake's simplification (spec §11)
		}
		wantCode(t, failed.Err, want)
		wantCode(t, rs.All(), want)
		if !strings.HasPrefix(failed.Err.Error(), "TOPIC bad: ") {
			t.Fatalf("error %q does not name the resource", failed.Err)
		}
		if !tg.kfake && !strings.Contains(failed.Err.Error(), "not-a-number") {
			t.Fatalf("error %q lacks the broker's message", failed.Err)
		}
		var ae *admin.Error
		if !errorsAs(failed.Err, &ae) || ae.Code() != want.Code {
			t.Fatalf("error %#v is not an *admin.Error with code %d", failed.Err, want.Code)
		}
	})
}

func TestDescribeUnknownTopicFailsOnlyThatResource(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		mustCreate(t, c, admin.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1})
		rs, err := c.DescribeConfigs(ctxT(t), []admin.ConfigResource{
			admin.TopicResource("t"), admin.TopicResource("missing"), admin.TopicResource("t"),
		}, admin.DescribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 {
			t.Fatalf("%d results, want the duplicate asked once", len(rs))
		}
		if rs[0].Err != nil || len(rs[0].Entries) == 0 {
			t.Fatalf("t: %+v", rs[0])
		}
		wantCode(t, rs[1].Err, kerr.UnknownTopicOrPartition)
		if _, err := rs.All(); err == nil {
			t.Fatal("All() = nil with a failed resource")
		}
	})
}

func TestBrokerConfigsPerBrokerAndClusterDefault(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"node.id": "3", "log.retention.hours": "100"})
	c := connect(t, b.Addr())
	rc := describeOne(t, c, admin.BrokerResource(3), admin.DescribeOptions{IncludeSynonyms: true})
	if e := entry(t, rc, "log.retention.hours"); e.ValueString() != "100" || e.Source != admin.SourceStaticBrokerConfig {
		t.Fatalf("log.retention.hours = %+v", e)
	}
	rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{
		admin.BrokerDefaultResource(): {admin.Set("log.retention.ms", "86400000")},
	}, admin.AlterOptions{Incremental: true})
	if err != nil || rs.All() != nil {
		t.Fatal(err, rs.All())
	}
	def := describeOne(t, c, admin.BrokerDefaultResource(), admin.DescribeOptions{})
	if e := entry(t, def, "log.retention.ms"); e.Source != admin.SourceDynamicDefaultBrokerConfig || e.ValueString() != "86400000" {
		t.Fatalf("default log.retention.ms = %+v", e)
	}
	lg := describeOne(t, c, admin.BrokerLoggerResource(3), admin.DescribeOptions{})
	if len(lg.Entries) == 0 {
		t.Fatal("no broker loggers")
	}
}

// The seed's USER and CLIENT config resources are kbroker's: quotas as
// configs. kfake answers them with INVALID_REQUEST.
func TestUserAndClientResourcesReadQuotas(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		res := admin.UserClientResource("alice", "c1")
		rs, err := c.AlterConfigs(ctxT(t), map[admin.ConfigResource][]admin.ConfigChange{
			res: {admin.Set("producer_byte_rate", "1024")},
		}, admin.AlterOptions{Incremental: true})
		if err != nil {
			t.Fatal(err)
		}
		if tg.kfake {
			wantCode(t, rs.All(), kerr.InvalidRequest)
			return
		}
		if err := rs.All(); err != nil {
			t.Fatal(err)
		}
		rc := describeOne(t, c, res, admin.DescribeOptions{})
		if e := entry(t, rc, "producer_byte_rate"); !strings.HasPrefix(e.ValueString(), "1024") {
			t.Fatalf("producer_byte_rate = %+v", e)
		}
		qs, err := c.DescribeClientQuotas(ctxT(t), admin.QuotaFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) != 1 || !qs[0].Entity.Equal(admin.UserClientEntity("alice", "c1")) || qs[0].Values["producer_byte_rate"] != 1024 {
			t.Fatalf("quotas = %+v", qs)
		}
	})
}

func TestUnreachableBrokerFailsTheCallWithinTheDeadline(t *testing.T) {
	c := connect(t, "127.0.0.1:1", kgo.RetryTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.DescribeConfigs(ctx, []admin.ConfigResource{admin.TopicResource("t")}, admin.DescribeOptions{})
	if err == nil {
		t.Fatal("describe against nothing succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}
