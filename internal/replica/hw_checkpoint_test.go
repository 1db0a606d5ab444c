package replica

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/storage"
	"kbroker/internal/testkit"
)

// restartable is broker 1's Partitions over a log directory and a bbolt
// store that outlive it: start opens them again as a restarted broker
// would, after the previous run's logs were closed.
type restartable struct {
	t     *testing.T
	dir   string
	store *meta.Store
	logs  *storage.Manager
}

func newRestartable(t *testing.T) *restartable {
	return &restartable{t: t, dir: t.TempDir(), store: testkit.BoltStore(t)}
}

func (r *restartable) start() *Partitions {
	r.t.Helper()
	if r.logs != nil {
		if err := r.logs.Close(); err != nil {
			r.t.Fatal(err)
		}
	}
	cfg, err := config.NewBroker(config.Properties{"log.dirs": r.dir, "node.id": "1"})
	if err != nil {
		r.t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	if r.logs, err = storage.OpenManager([]string{r.dir}, discard); err != nil {
		r.t.Fatal(err)
	}
	logs := r.logs
	r.t.Cleanup(func() { logs.Close() })
	configs := dynconfig.New(dynconfig.Options{Broker: cfg, Store: r.store, Logger: discard, Audit: discard})
	return New(cfg, r.store, configs, r.logs, discard)
}

func appendRecords(t *testing.T, pt Partition, n int) {
	t.Helper()
	for i := range n {
		b := record.NewBuilder()
		b.Add(1000, nil, []byte{byte('a' + i)})
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pt.AppendAsLeader(batch, time.Now(), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// A leader of three replicas whose followers have the first 2 of its 3
// records commits 2; after a restart it starts from that checkpointed
// high watermark, not from its log end, so the third record, which no
// other replica has, is not read. A partition of one replica still
// commits its whole log; a replicated partition the checkpoint does not
// know starts at its log start offset.
func TestRestartedReplicaStartsItsHighWatermarkFromTheCheckpoint(t *testing.T) {
	r := newRestartable(t)
	p := r.start()
	rf3 := createTopic(t, r.store, "rf3", []int32{1, 2, 3})
	rf1 := createTopic(t, r.store, "rf1", []int32{1})
	snap := r.store.Snapshot()
	pt, err := p.Lead(snap, rf3, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, pt, 3)
	for _, follower := range []int32{2, 3} {
		if _, err := pt.FollowerFetch(ReplicaState{ID: follower, BrokerEpoch: -1}, 0, 2, -1, 1<<20, true); err != nil {
			t.Fatal(err)
		}
	}
	if hw := pt.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark with both followers at 2 = %d, want 2", hw)
	}
	single, err := p.Lead(snap, rf1, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, single, 2)
	if err := p.WriteHWCheckpoints(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, HWCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || lines[0] != "0" || lines[1] != "2" || !strings.Contains(string(b), "\nrf3 0 2\n") || !strings.Contains(string(b), "\nrf1 0 2") {
		t.Fatalf("checkpoint file in Kafka's format with both partitions, got:\n%s", b)
	}

	p = r.start()
	snap = r.store.Snapshot()
	pt, err = p.Lead(snap, rf3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if hw, end := pt.HighWatermark(), pt.log.LogEndOffset(); hw != 2 || end != 3 {
		t.Fatalf("after the restart: high watermark %d, log end %d; want 2 and 3", hw, end)
	}
	got, err := pt.Read(0, 1<<20, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRecords(t, got.Records); n != 2 {
		t.Fatalf("a consumer read %d records after the restart, want the 2 committed", n)
	}
	if single, err = p.Lead(snap, rf1, 0); err != nil || single.HighWatermark() != 2 {
		t.Fatalf("single replica after the restart: high watermark %d (%v), want its log end 2", single.HighWatermark(), err)
	}

	// Without its entry (a checkpoint lost, or never written before a
	// crash) the replicated partition shows nothing until followers fetch.
	if err := os.Remove(filepath.Join(r.dir, HWCheckpointFile)); err != nil {
		t.Fatal(err)
	}
	p = r.start()
	if pt, err = p.Lead(r.store.Snapshot(), rf3, 0); err != nil || pt.HighWatermark() != 0 {
		t.Fatalf("without a checkpoint: high watermark %d (%v), want the log start 0", pt.HighWatermark(), err)
	}
}

// A partition not opened since the restart (its log deferred) keeps its
// entry when the checkpoint is rewritten; a deleted topic's entry goes.
func TestCheckpointKeepsUnopenedPartitionsAndDropsDeletedTopics(t *testing.T) {
	r := newRestartable(t)
	p := r.start()
	createTopic(t, r.store, "a", []int32{1, 2})
	createTopic(t, r.store, "gone", []int32{1, 2})
	if err := writeHWCheckpoint(filepath.Join(r.dir, HWCheckpointFile), map[tpKey]int64{{"a", 0}: 7, {"gone", 0}: 3}); err != nil {
		t.Fatal(err)
	}
	p = r.start()
	if err := r.store.DeleteTopic(testkit.Context(t, 5*time.Second), "gone"); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteHWCheckpoints(); err != nil {
		t.Fatal(err)
	}
	entries, err := readHWCheckpoint(filepath.Join(r.dir, HWCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[tpKey{"a", 0}] != 7 {
		t.Fatalf("rewritten checkpoint = %v, want only a-0 at 7", entries)
	}
}

// A malformed checkpoint is an error, never a guess.
func TestMalformedCheckpointIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "0\n1\nt 0 -4\n"} {
		path := filepath.Join(dir, HWCheckpointFile)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readHWCheckpoint(path); err == nil {
			t.Errorf("checkpoint %q accepted", body)
		}
	}
}

func countRecords(t *testing.T, batches []byte) int {
	t.Helper()
	n := 0
	for len(batches) > 0 {
		h, ok := record.ParseHeader(batches)
		if !ok {
			t.Fatalf("bad batch in %d bytes", len(batches))
		}
		n += int(h.LastOffset-h.BaseOffset) + 1
		batches = batches[h.Size:]
	}
	return n
}
