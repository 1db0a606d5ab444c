package cluster_test

import (
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/testbin"
)

// KIP-966 with real processes: a replica that left the ISR below
// min.insync.replicas is an eligible leader replica (ELR) because the
// high watermark stood still since, so it holds every committed record;
// that holds only while its log is what it was. Broker 3 stops cleanly
// (SIGTERM) and comes back: it stays in the ELR. It is then killed
// (kill -9, no clean-shutdown marker) and comes back: it may have lost
// records it had not flushed, and the controller takes it out of the ELR.
// Broker 3 comes back unable to fetch (its inter-broker listener is one no
// other broker has), so it cannot rejoin the ISR and leave the ELR that
// way.
func TestUncleanShutdownTakesTheReplicaOutOfTheELR(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kbroker binary")
	}
	etcd := etcdtest.Start(t)
	brokers := map[int32]*testbin.Broker{}
	procs := map[int32]*testbin.Proc{}
	for id := int32(1); id <= 3; id++ {
		brokers[id] = testbin.NewBroker(t, map[string]string{
			"node.id":                          strconv.Itoa(int(id)),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
		})
		procs[id] = brokers[id].Start(t)
	}
	addr := procs[1].Addr
	eventually(t, "three brokers in the metadata", func() bool { return len(metadata(t, addr).Brokers) == 3 })

	rt := topicToCreate("elr", -1, -1, map[string]string{"min.insync.replicas": "3"})
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, rt)
	if got := send[*kmsg.CreateTopicsResponse](t, addr, req).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating elr: %v %s", kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	eventually(t, "elr with its whole ISR", func() bool { return len(describedPartition(t, addr, "elr").ISR) == 3 })

	restartUnfetching := func() {
		t.Helper()
		brokers[3].Isolated = true
		procs[3] = brokers[3].Start(t)
		eventually(t, "broker 3 registered again", func() bool { return len(metadata(t, addr).Brokers) == 3 })
	}
	inELR := func(want []int32) func() bool {
		return func() bool {
			p := describedPartition(t, addr, "elr")
			return slices.Equal(p.ISR, []int32{1, 2}) && slices.Equal(p.EligibleLeaderReplicas, want)
		}
	}

	procs[3].Stop(t, syscall.SIGTERM, 30*time.Second)
	eventually(t, "broker 3 out of the ISR, into the ELR", inELR([]int32{3}))
	// The leader may still hold the last fetch of the stopped broker,
	// parked for up to replica.fetch.wait.max.ms; answered once the broker
	// is registered again, it does not take it back into the ISR: it
	// carries the broker epoch of the stopped run.
	restartUnfetching()
	// A clean registration changes nothing; give the controller time to
	// act on it all the same.
	time.Sleep(time.Second)
	if p := describedPartition(t, addr, "elr"); !slices.Equal(p.EligibleLeaderReplicas, []int32{3}) {
		t.Fatalf("after broker 3 stopped cleanly and came back: isr %v elr %v, want elr [3]", p.ISR, p.EligibleLeaderReplicas)
	}

	procs[3].Kill9(t)
	restartUnfetching()
	eventually(t, "broker 3, back after kill -9, out of the ELR", inELR(nil))
}
