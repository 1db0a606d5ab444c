package api_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// ApiVersions lists ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe
// (69) only while group.coordinator.rebalance.protocols includes
// "consumer", as Kafka's does.
func TestApiVersionsListsConsumerGroupAPIsOnlyWhenServed(t *testing.T) {
	for _, tc := range []struct {
		protocols string
		listed    bool
	}{{"classic,consumer", true}, {"classic", false}} {
		b := brokertest.Start(t, config.Properties{"group.coordinator.rebalance.protocols": tc.protocols})
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-test", "1"
		resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, b.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		listed := map[int16]bool{}
		for _, k := range resp.ApiKeys {
			listed[k.ApiKey] = true
		}
		for _, key := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.JoinGroup} {
			want := tc.listed || key == kmsg.JoinGroup
			if listed[key.Int16()] != want {
				t.Errorf("rebalance.protocols=%s: key %d listed %v, want %v", tc.protocols, key, listed[key.Int16()], want)
			}
		}
	}
}
