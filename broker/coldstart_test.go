package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// coldStartTopics is issue 3's "cold start with 10,000 topic overrides": more
// one-partition topics than a broker holding three files open per partition
// could start with under a 20,000 RLIMIT_NOFILE.
const coldStartTopics = 10_000

// TestRestartWithTenThousandTopicsIsCheapAndServes creates 10,000 topics with
// config overrides, writes to a few, restarts the broker over the same data
// and checks that it answers Metadata without holding a file per partition,
// and that the topics written before and the ones never written both take
// produce and fetch. The time from Start to the first Metadata answer is
// logged, not asserted: the machine running the test decides it.
func TestRestartWithTenThousandTopicsIsCheapAndServes(t *testing.T) {
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	name := func(i int) string { return fmt.Sprintf("cold-%05d", i) }
	written := []int{0, 4321, coldStartTopics - 1} // produced to before the restart
	fresh := []int{1, 5000, coldStartTopics - 2}   // first written after it

	b := brokertest.StartWith(t, props)
	cl := testkit.Client(t, b.Addr())
	created := time.Now()
	createColdTopics(ctx, t, kadm.NewClient(cl), name)
	t.Logf("created %d topics in %v", coldStartTopics, time.Since(created).Round(time.Millisecond))
	produceEach(ctx, t, cl, name, written, "before")
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	fdsBefore := processFDs(t)
	start := time.Now()
	b = brokertest.StartWith(t, props)
	started := time.Since(start)
	cl = testkit.Client(t, b.Addr())
	meta := kmsg.NewPtrMetadataRequest()
	if _, err := meta.RequestWith(ctx, cl); err != nil {
		t.Fatalf("metadata after restart: %v", err)
	}
	t.Logf("cold start with %d topics: Start %v, first Metadata answer %v after Start began",
		coldStartTopics, started.Round(time.Microsecond), time.Since(start).Round(time.Microsecond))
	// A broker opening every partition would hold at least one file each.
	const maxExtraFDs = 200
	if n := processFDs(t) - fdsBefore; n > maxExtraFDs {
		t.Fatalf("restarted broker holds %d more file descriptors than before it started; want at most %d", n, maxExtraFDs)
	}

	produceEach(ctx, t, cl, name, append(written, fresh...), "after")
	want := map[string][]string{}
	for _, i := range written {
		want[name(i)] = []string{"before", "after"}
	}
	for _, i := range fresh {
		want[name(i)] = []string{"after"}
	}
	got := consumeFromStart(ctx, t, b.Addr(), want)
	for topic, vals := range want {
		if fmt.Sprint(got[topic]) != fmt.Sprint(vals) {
			t.Errorf("%s: fetched %q, want %q", topic, got[topic], vals)
		}
	}
	if n := processFDs(t) - fdsBefore; n > maxExtraFDs {
		t.Fatalf("after produce and fetch the broker holds %d more file descriptors; want at most %d", n, maxExtraFDs)
	}
}

// createColdTopics creates the topics in requests of a few thousand, each with
// the three overrides the kbench B9 case gives them.
func createColdTopics(ctx context.Context, t *testing.T, adm *kadm.Client, name func(int) string) {
	t.Helper()
	str := func(s string) *string { return &s }
	configs := map[string]*string{"retention.ms": str("86400000"), "max.message.bytes": str("1048576"), "cleanup.policy": str("delete")}
	const batch = 2000
	for i := 0; i < coldStartTopics; i += batch {
		var names []string
		for j := i; j < min(i+batch, coldStartTopics); j++ {
			names = append(names, name(j))
		}
		resps, err := adm.CreateTopics(ctx, 1, 1, configs, names...)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			t.Fatalf("create topics %s..: %v", names[0], err)
		}
	}
}

func produceEach(ctx context.Context, t *testing.T, cl *kgo.Client, name func(int) string, topics []int, value string) {
	t.Helper()
	var recs []*kgo.Record
	for _, i := range topics {
		recs = append(recs, &kgo.Record{Topic: name(i), Value: []byte(value)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %q: %v", value, err)
	}
}

// consumeFromStart reads the topics of want from the start until it has as many
// records as want lists, and returns their values by topic.
func consumeFromStart(ctx context.Context, t *testing.T, addr string, want map[string][]string) map[string][]string {
	t.Helper()
	var topics []string
	n := 0
	for topic, vals := range want {
		topics = append(topics, topic)
		n += len(vals)
	}
	cl := testkit.Client(t, addr, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string][]string{}
	for n > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetching: %v (got %v)", err, got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Topic] = append(got[r.Topic], string(r.Value))
			n--
		})
	}
	return got
}

// processFDs counts this process's file descriptors: the broker runs in it.
func processFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(ents)
}

// TestCrashedPartitionIsRecoveredAtStartup pins what deferring clean logs must
// not change: a partition whose log a crash left without its clean-shutdown
// marker is recovered (its torn tail cut) while the broker starts, before any
// request, while a cleanly closed one is left unopened until used.
func TestCrashedPartitionIsRecoveredAtStartup(t *testing.T) {
	dir := t.TempDir()
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := func(i int) string { return []string{"crashed", "clean"}[i] }
	b := brokertest.StartWith(t, props)
	cl := testkit.Client(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, "crashed", "clean"); err != nil {
		t.Fatal(err)
	}
	produceEach(ctx, t, cl, name, []int{0, 1}, "acked")
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	segment := filepath.Join(dir, "crashed-0", "00000000000000000000.log")
	st, err := os.Stat(segment)
	if err != nil {
		t.Fatal(err)
	}
	// What a kill -9 in the middle of an append leaves: no marker, a torn batch.
	if err := os.Remove(filepath.Join(dir, "crashed-0", ".kbroker_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(segment, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x01\x00torn"))
	f.Close()

	b = brokertest.StartWith(t, props)
	if now, _ := os.Stat(segment); now.Size() != st.Size() {
		t.Fatalf("crashed partition's segment is %d bytes once the broker started, want %d: not recovered at startup", now.Size(), st.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, "clean-0", ".kbroker_cleanshutdown")); err != nil {
		t.Fatalf("cleanly closed partition opened at startup: %v", err)
	}
	cl = testkit.Client(t, b.Addr())
	produceEach(ctx, t, cl, name, []int{0, 1}, "after")
	got := consumeFromStart(ctx, t, b.Addr(), map[string][]string{"crashed": {"acked", "after"}, "clean": {"acked", "after"}})
	for _, topic := range []string{"crashed", "clean"} {
		if fmt.Sprint(got[topic]) != "[acked after]" {
			t.Errorf("%s: fetched %q after restart", topic, got[topic])
		}
	}
}
