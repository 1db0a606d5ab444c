package api_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"kbroker/broker/brokertest"
)

// DescribeClientQuotas answers from a listing kept between requests; every
// quota change must show in the next answer.
func TestDescribeClientQuotasSeesEveryChange(t *testing.T) {
	b := brokertest.Start(t, nil)
	_, adm := client(t, b)
	alice := kadm.ClientQuotaEntity{{Type: "user", Name: str("alice")}}
	values := func() map[string]float64 {
		t.Helper()
		got, err := adm.DescribeClientQuotas(ctx(t), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, e := range got {
			for _, v := range e.Values {
				out[e.Entity[0].Type+"="+*e.Entity[0].Name+" "+v.Key] = v.Value
			}
		}
		return out
	}
	setQuota(t, adm, alice, "producer_byte_rate", 1024)
	if v := values(); len(v) != 1 || v["user=alice producer_byte_rate"] != 1024 {
		t.Fatalf("first: %v", v)
	}
	setQuota(t, adm, alice, "producer_byte_rate", 2048)
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: str("c1")}}, "request_percentage", 50)
	if v := values(); len(v) != 2 || v["user=alice producer_byte_rate"] != 2048 || v["client-id=c1 request_percentage"] != 50 {
		t.Fatalf("after changes: %v", v)
	}
	res, err := adm.AlterClientQuotas(ctx(t), []kadm.AlterClientQuotaEntry{{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if v := values(); len(v) != 1 || v["client-id=c1 request_percentage"] != 50 {
		t.Fatalf("after removal: %v", v)
	}
}

// Describes share listings while quotas change under them.
func TestDescribeClientQuotasConcurrentWithChanges(t *testing.T) {
	b := brokertest.Start(t, nil)
	_, adm := client(t, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := adm.DescribeClientQuotas(ctx(t), false, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: str(fmt.Sprint("c", i))}}, "request_percentage", 50)
	}
	wg.Wait()
	got, err := adm.DescribeClientQuotas(ctx(t), false, nil)
	if err != nil || len(got) != 20 {
		t.Fatalf("after the changes: %d entities, %v", len(got), err)
	}
}
