package cluster_test

import (
	"encoding/json"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"kbroker/internal/meta"
	"kbroker/internal/testkit"
)

// A broker in controlled shutdown whose lease is lost (etcd unreachable
// for longer than its TTL; here revoked) registers again still marked in
// controlled shutdown: it is still stopping, and without the mark the
// controller would hand it leaderships and put it back in ISRs.
func TestRegistrationAfterALostLeaseKeepsTheControlledShutdownMark(t *testing.T) {
	tc := startCluster(t, 2, nil, nil)
	ctx := testkit.Context(t, 30*time.Second)
	if err := tc.brokers[0].ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{tc.etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key := "/kbroker/" + meta.BrokerKey(1)
	registration := func() (meta.Broker, clientv3.LeaseID, bool) {
		resp, err := cli.Get(ctx, key)
		if err != nil || len(resp.Kvs) == 0 {
			return meta.Broker{}, 0, false
		}
		var reg meta.Broker
		if err := json.Unmarshal(resp.Kvs[0].Value, &reg); err != nil {
			t.Fatalf("decoding %s: %v", key, err)
		}
		return reg, clientv3.LeaseID(resp.Kvs[0].Lease), true
	}
	reg, lease, ok := registration()
	if !ok || !reg.InControlledShutdown {
		t.Fatalf("registration after the controlled shutdown: %+v (present %v), want the mark", reg, ok)
	}
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 1 registered again on a new lease", func() bool {
		_, l, ok := registration()
		return ok && l != lease
	})
	if reg, _, _ := registration(); !reg.InControlledShutdown {
		t.Errorf("registration after the lost lease: %+v, want it still in controlled shutdown", reg)
	}
}
