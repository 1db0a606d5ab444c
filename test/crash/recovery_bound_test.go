package crash

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/testkit"
)

// Recovery after kill -9 is bounded as Kafka's is by its recovery point:
// a partition's rolled segments are covered by the producer-state
// snapshot written at the roll, so the restart reads only each log's
// active segment, however long the log. The snapshot carries what the
// scan would have found: a transaction left open across segment rolls
// still holds the last stable offset at its first record, which lies in a
// segment the restart does not read.
func TestKill9RecoveryReadsOnlyTheActiveSegments(t *testing.T) {
	b := newBroker(t, nil, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := testkit.Client(t, p.Addr)
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, txnPartitions, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, "txn"); err != nil {
		t.Fatal(err)
	}
	producer := testkit.Client(t, p.Addr, kgo.TransactionalID("bounded"), kgo.DefaultProduceTopic("txn"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1000)
	transaction := func(records int, commit bool) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < records; i++ {
			producer.Produce(ctx, &kgo.Record{Value: value}, nil)
		}
		if err := producer.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 30; i++ {
		transaction(400, true) // about 6 MiB per partition: 6 segments each
	}
	committedEnd := listOffsets(t, ctx, admin, false)
	transaction(3000, false) // 1.5 MiB per partition, open across a roll
	lso, end := listOffsets(t, ctx, admin, true), listOffsets(t, ctx, admin, false)
	if !maps.Equal(lso, committedEnd) {
		t.Fatalf("LSO %v with a transaction open, want its first offsets %v", lso, committedEnd)
	}
	// A rolled segment is synced, and its snapshot written, in the
	// background (as Kafka flushes a rolled segment and then moves its
	// recovery point): kill -9 once every roll's snapshot is on disk, so
	// that the bound holds exactly.
	segments := 0
	for part := 0; part < txnPartitions; part++ {
		dir := filepath.Join(b.DataDir(), "txn-"+strconv.Itoa(part))
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		segments += len(logs)
		if len(logs) < 6 {
			t.Fatalf("%d segments in %s, want many", len(logs), dir)
		}
		newest := strings.TrimSuffix(logs[len(logs)-1], ".log") + ".snapshot"
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(newest); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("no snapshot at the last roll of %s: %v", dir, err)
			}
		}
	}

	p.Kill9(t)
	p = run(t, b)
	// The broker logs what recovery did once startup is over, which may
	// be just after it listens.
	recoveryLine := regexp.MustCompile(`recovered partition logs after an unclean shutdown.* partitions=(\d+) segments_scanned=(\d+)`)
	var m [][][]byte
	for deadline := time.Now().Add(10 * time.Second); len(m) == 0; time.Sleep(20 * time.Millisecond) {
		out, err := os.ReadFile(b.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		if m = recoveryLine.FindAllSubmatch(out, -1); len(m) == 0 && time.Now().After(deadline) {
			t.Fatalf("no recovery line in the broker's log after kill -9")
		}
	}
	recovered, scanned := m[len(m)-1][1], m[len(m)-1][2]
	if string(recovered) != string(scanned) {
		t.Fatalf("recovery of %s logs scanned %s segments (txn had %d), want only each log's active one", recovered, scanned, segments)
	}
	cl := testkit.Client(t, p.Addr)
	if got := listOffsets(t, ctx, cl, true); !maps.Equal(got, lso) {
		t.Fatalf("LSO %v after the restart, want %v: the open transaction's start, from the snapshot", got, lso)
	}
	if got := listOffsets(t, ctx, cl, false); !maps.Equal(got, end) {
		t.Fatalf("log end %v after the restart, want %v", got, end)
	}
}
