package crash

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The logs a broker creates when a new topic's partitions are assigned to
// it, before any request for them, survive kill -9: after the restart each
// partition keeps its directory and partition.metadata (the same topic id,
// so nothing is taken for a stale incarnation and replaced), and takes
// records and serves them.
func TestKill9KeepsLogsCreatedOnAssignment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the kbroker binary")
	}
	b := newBroker(t, nil, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 8
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, "fresh"); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	metadata := make([][]byte, partitions)
	for i := range partitions {
		path := filepath.Join(b.DataDir(), fmt.Sprintf("fresh-%d", i), "partition.metadata")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if metadata[i], err = os.ReadFile(path); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no partition.metadata for fresh-%d 10 s after the topic was created: %v", i, err)
			}
		}
	}
	p.Kill9(t)
	p = run(t, b)

	for i := range partitions {
		got, err := os.ReadFile(filepath.Join(b.DataDir(), fmt.Sprintf("fresh-%d", i), "partition.metadata"))
		if err != nil || string(got) != string(metadata[i]) {
			t.Fatalf("fresh-%d after kill -9: partition.metadata %q (%v), was %q", i, got, err, metadata[i])
		}
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RetryTimeout(5*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range partitions {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fresh", Partition: int32(i), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("producing to fresh-%d after kill -9: %v", i, err)
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	for i := range partitions {
		if o, _ := ends.Lookup("fresh", int32(i)); o.Err != nil || o.Offset != 1 {
			t.Fatalf("fresh-%d ends at %d (%v) after one record, want 1", i, o.Offset, o.Err)
		}
	}
}
