package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kbroker/internal/testkit"
)

// A partition's log is created when the metadata makes this broker its
// replica — at topic creation, and for partitions added later — before
// any request reaches it, as Kafka's broker creates it on the metadata
// change; a partition placed on another broker gets no directory here.
func TestLogIsCreatedWhenThePartitionIsAssignedHere(t *testing.T) {
	k := testkit.NewBrokerBase(t)
	p := New(k.Config, k.Store, k.Configs, k.Logs, k.Logger)
	dir := k.Config.LogDirs[0]
	createTopic(t, k.Store, "fresh", []int32{1}, []int32{2}, []int32{1})
	waitForLogs(t, p, dir, "fresh", 0, 2)

	if err := k.Store.AddPartitions(testkit.Context(t, 5*time.Second), "fresh", 5, [][]int32{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	waitForLogs(t, p, dir, "fresh", 3)
	for _, partition := range []int{1, 4} { // led by broker 2
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("fresh-%d", partition))); !os.IsNotExist(err) {
			t.Errorf("broker 1 made a directory for fresh-%d, which only broker 2 holds (%v)", partition, err)
		}
	}
}

// waitForLogs waits until each partition of topic has its log open and
// its partition.metadata on disk.
func waitForLogs(t *testing.T, p *Partitions, dir, topic string, partitions ...int32) {
	t.Helper()
	for _, partition := range partitions {
		meta := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition), "partition.metadata")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			_, err := os.Stat(meta)
			if err == nil && p.logs.Get(topic, partition) != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s-%d has no log 10 s after it was assigned here (%v)", topic, partition, err)
			}
		}
	}
}
