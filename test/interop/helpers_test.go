// Package interop runs real Kafka clients (franz-go, sarama, kcat/librdkafka)
// against a real kbroker over TCP: in-process through brokertest, or the
// built kbroker binary for crash and signal tests.
package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"

	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// testProps are the properties of an in-process broker whose data lives in
// dir, so that a second broker can be started over the same log.dirs.
func testProps(dir string, extra config.Properties) config.Properties {
	props := config.Properties{
		"listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs":  dir,
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

// startBroker starts an in-process broker with a fresh data directory.
func startBroker(t *testing.T, extra config.Properties) string {
	t.Helper()
	return brokertest.Start(t, extra).Addr()
}

// newAdmin returns a kadm client for addr, closed when the test ends.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(testkit.Client(t, addr))
}

// endOffsets lists the high watermark of every partition of topic.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx := testkit.Context(t, 10*time.Second)
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends
}

// consumeAll reads every partition of topic from the start up to the end
// offsets listed when it is called, directly (no group), and returns each
// partition's records in the order they were fetched. It fails the test if
// the end is not reached within timeout.
func consumeAll(t *testing.T, addr, topic string, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	ends := endOffsets(t, kadm.NewClient(testkit.Client(t, addr)), topic)
	starts := map[int32]kgo.Offset{}
	for p := range ends {
		starts[p] = kgo.NewOffset().AtStart()
	}
	got := map[int32][]*kgo.Record{}
	if len(ends) == 0 {
		return got
	}
	cl := testkit.Client(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	defer cl.Close()
	reached := func() bool {
		for p, end := range ends {
			if n := len(got[p]); end > 0 && (n == 0 || got[p][n-1].Offset < end-1) {
				return false
			}
		}
		return true
	}
	ctx := testkit.Context(t, timeout)
	for !reached() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: not at the end offsets %v after %v; got %s", topic, ends, timeout, progress(got))
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Fatalf("consume %s[%d]: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	return got
}

// progress summarizes consumed records per partition for failure messages.
func progress(got map[int32][]*kgo.Record) string {
	var b strings.Builder
	for p, rs := range got {
		last := int64(-1)
		if len(rs) > 0 {
			last = rs[len(rs)-1].Offset
		}
		fmt.Fprintf(&b, "[p%d: %d records, last offset %d] ", p, len(rs), last)
	}
	return b.String()
}

// newKbroker returns a broker directory for the kbroker binary (its log
// printed if the test fails), run at debug level.
func newKbroker(t *testing.T) *testbin.Broker {
	t.Helper()
	b := testbin.NewBroker(t, nil)
	b.Args = []string{"--log-level", "debug"}
	return b
}

// runCmd runs name with args and stdin under a timeout and returns its
// stdout; a non-zero exit fails the test with stderr shown.
func runCmd(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (ctx: %v)\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	return stdout.String()
}
