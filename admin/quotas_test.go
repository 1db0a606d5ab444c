package admin_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

func TestClientQuotasDescribeWithFiltersAlterAndRemove(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		rs, err := c.AlterClientQuotas(ctxT(t), []admin.QuotaAlteration{
			{Entity: admin.UserEntity("alice"), Ops: []admin.QuotaOp{{Key: "producer_byte_rate", Value: 1024}}},
			{Entity: admin.UserClientEntity("alice", ""), Ops: []admin.QuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
			{Entity: admin.ClientEntity("c1"), Ops: []admin.QuotaOp{{Key: "request_percentage", Value: 50}}},
		}, false)
		if err != nil || rs.All() != nil {
			t.Fatal(err, rs.All())
		}
		all, err := c.DescribeClientQuotas(ctxT(t), admin.QuotaFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 {
			t.Fatalf("all quotas = %+v", all)
		}
		strict, err := c.DescribeClientQuotas(ctxT(t), admin.QuotaFilter{Strict: true,
			Components: []admin.QuotaFilterComponent{{EntityType: admin.EntityUser, Match: admin.MatchExact, Name: "alice"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(strict) != 1 || strict[0].Entity.String() != "user-principal 'alice'" || strict[0].Values["producer_byte_rate"] != 1024 {
			t.Fatalf("strict alice = %+v", strict)
		}
		def, err := c.DescribeClientQuotas(ctxT(t), admin.QuotaFilter{Components: []admin.QuotaFilterComponent{
			{EntityType: admin.EntityClientID, Match: admin.MatchDefault}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(def) != 1 || def[0].Entity.String() != "user-principal 'alice', the default client-id" {
			t.Fatalf("default client-id = %+v", def)
		}
		if err := c.RemoveClientQuotas(ctxT(t), admin.UserEntity("alice"), "producer_byte_rate"); err != nil {
			t.Fatal(err)
		}
		strict, err = c.DescribeClientQuotas(ctxT(t), admin.QuotaFilter{Strict: true,
			Components: []admin.QuotaFilterComponent{{EntityType: admin.EntityUser, Match: admin.MatchExact, Name: "alice"}}})
		if err != nil || len(strict) != 0 {
			t.Fatalf("after remove: %+v, %v", strict, err)
		}
	})
}

func TestInvalidQuotaIsReportedOnItsEntity(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		if tg.kfake {
			t.Skip("kfake stores quotas without validating keys or values")
		}
		rs, err := c.AlterClientQuotas(ctxT(t), []admin.QuotaAlteration{
			{Entity: admin.UserEntity("bob"), Ops: []admin.QuotaOp{{Key: "producer_byte_rate", Value: -1}}},
			{Entity: admin.UserEntity("carol"), Ops: []admin.QuotaOp{{Key: "producer_byte_rate", Value: 10}}},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, rs[0].Err, kerr.InvalidRequest)
		if rs[1].Err != nil {
			t.Fatal(rs[1].Err)
		}
	})
}
