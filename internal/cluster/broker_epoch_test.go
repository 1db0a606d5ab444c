package cluster_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// Broker epochs (KIP-903). Broker 3's last fetch waits at the leader for
// new records (replica.fetch.wait.max.ms, long here) when broker 3 stops
// cleanly, and the controller takes it out of the ISR. It comes back at
// once, unable to fetch. The old run's fetch is answered after the new run
// registered: it carries the old run's broker epoch, so the leader does
// not take the new run, which has fetched nothing, back into the ISR on
// the strength of it. Without broker epochs it did, and the new run stayed
// in the ISR without a record of its own until replica.lag.time.max.ms.
func TestParkedFetchOfAStoppedFollowerDoesNotTakeItsNextRunIntoTheISR(t *testing.T) {
	const fetchWait = 3 * time.Second
	tc := startCluster(t, 3, nil, map[int32]config.Properties{3: {"replica.fetch.wait.max.ms": "3000"}})
	createAssignedTopic(t, tc, "parked", []int32{1, 2, 3}, nil)
	isr := func() []int32 { return partitionsOf(t, tc.addr(1), "parked")[0].ISR }
	eventually(t, "the whole ISR", func() bool { return len(isr()) == 3 })
	// Broker 3 fetches from the new partition, and that fetch waits at the
	// leader, nothing being produced.
	time.Sleep(500 * time.Millisecond)

	props := tc.brokers[2].Config().Props
	if err := tc.brokers[2].Close(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, "broker 3 out of the ISR", func() bool { return slices.Equal(isr(), []int32{1, 2}) })
	tc.brokers[2] = brokertest.StartWith(t, layered(props, brokertest.Isolated()))
	if restart := time.Since(stopped); restart > fetchWait {
		t.Logf("broker 3 took %v to stop and come back, longer than its fetch waits: this run shows nothing", restart)
	}
	eventually(t, "broker 3 registered again", func() bool { return len(metadata(t, tc.addr(1)).Brokers) == 3 })
	// The old run's fetch is answered by now.
	time.Sleep(time.Until(stopped.Add(fetchWait + time.Second)))
	if got := isr(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("ISR %v once the stopped run's fetch was answered, want [1 2]: broker 3's new run has fetched nothing", got)
	}
}

// layered is props with over's settings over them.
func layered(props, over config.Properties) config.Properties {
	out := maps.Clone(props)
	maps.Copy(out, over)
	return out
}
