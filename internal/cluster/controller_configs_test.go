package cluster_test

import (
	"slices"
	"testing"

	"kbroker/broker/brokertest"
)

// The controller resolves min.insync.replicas and
// unclean.leader.election.enable as the rest of the broker does: a
// cluster-wide dynamic default (the BROKER resource "") applies to a topic
// without an override, as in Kafka, not only server.properties.
//
// min.insync.replicas=3 as the cluster default: a replica that dies leaves
// an ISR of two, below it, so the controller keeps it as an eligible
// leader replica (KIP-966). unclean.leader.election.enable=true as the
// cluster default: once both replicas are down, the one that was out of
// sync comes back and leads.
func TestControllerAppliesClusterWideDynamicTopicDefaults(t *testing.T) {
	tc := startCluster(t, 3, nil, nil)
	for _, kv := range [][2]string{{"min.insync.replicas", "3"}, {"unclean.leader.election.enable", "true"}} {
		if err := alterTopicConfig(t, tc.addr(1), "", kv[0], kv[1]); err != nil {
			t.Fatalf("setting the cluster default %s=%s: %v", kv[0], kv[1], err)
		}
	}

	tc.createOn(t, "strict", []int32{1, 2, 3}, nil)
	if err := tc.brokers[2].Close(); err != nil {
		t.Fatal(err)
	}
	tc.brokers[2] = nil
	// Metadata drops a non-live broker from the ISR it shows at once, before
	// the controller has committed the ISR change and the ELR with it: wait
	// for the committed ELR, not only for the ISR shown.
	eventually(t, "broker 3 out of the ISR of strict and in its ELR (ISR below the cluster's min.insync.replicas 3)", func() bool {
		got := describedPartition(t, tc.addr(1), "strict")
		return len(got.ISR) == 2 && slices.Equal(got.EligibleLeaderReplicas, []int32{3})
	})

	// Broker 3 is down: "loose" lives on brokers 1 and 2, led by 1. Its
	// own min.insync.replicas=1 keeps the ELR out of the way: a replica
	// out of the ISR is out for good.
	tc.createOn(t, "loose", []int32{1, 2}, map[string]string{"min.insync.replicas": "1"})
	props2 := tc.brokers[1].Config().Props
	if err := tc.brokers[1].Close(); err != nil {
		t.Fatal(err)
	}
	tc.brokers[1] = nil
	eventually(t, "broker 2 out of the ISR of loose", func() bool {
		return slices.Equal(describedPartition(t, tc.addr(1), "loose").ISR, []int32{1})
	})
	if err := tc.brokers[0].Close(); err != nil {
		t.Fatal(err)
	}
	tc.brokers[0] = nil
	// Broker 2 comes back alone: it was not in the ISR (nor the ELR) when
	// broker 1 died, so only an unclean election gives it the partition.
	tc.brokers[1] = brokertest.StartWith(t, props2)
	eventually(t, "broker 2 elected leader of loose, uncleanly", func() bool {
		p := describedPartition(t, tc.addr(2), "loose")
		return p.LeaderID == 2 && slices.Equal(p.ISR, []int32{2})
	})
}
