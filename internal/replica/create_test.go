package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kbroker/internal/meta"
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

// A bulk creation of more partitions than createOnAssignmentMax leaves
// their logs to first use, so that thousands of idle partitions cost no
// open log; the first request creates one as before.
func TestBulkCreationLeavesLogsToFirstUse(t *testing.T) {
	k := testkit.NewBrokerBase(t)
	p := New(k.Config, k.Store, k.Configs, k.Logs, k.Logger)
	bulk, err := k.Store.CreateTopic(context.Background(), meta.Topic{Name: "bulk", Partitions: createOnAssignmentMax + 1, ReplicationFactor: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A small topic created next gets its log in the background; by then
	// the bulk topic's, had they been started first, would be appearing.
	small := createTopic(t, k.Store, "small", []int32{1})
	waitForLogs(t, p, k.Config.LogDirs[0], small.Name, 0)
	if ds, _ := filepath.Glob(filepath.Join(k.Config.LogDirs[0], "bulk-*")); len(ds) != 0 {
		t.Fatalf("%d of the bulk topic's %d partitions got a log before any request", len(ds), bulk.Partitions)
	}
	if _, err := p.Lead(k.Store.Snapshot(), bulk, 7); err != nil {
		t.Fatal(err)
	}
	waitForLogs(t, p, k.Config.LogDirs[0], bulk.Name, 7)
}
