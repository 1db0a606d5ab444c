package cluster_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

// TestMain builds the kbroker binary once, on first use (testbin).
func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// TestThreeKbrokerProcessesFormOneCluster is the cluster scenario against
// the built binary: three "kbroker serve" processes and one etcd.
func TestThreeKbrokerProcessesFormOneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kbroker binary")
	}
	etcd := etcdtest.Start(t)
	var addrs []string
	var procs []*testbin.Proc
	for id := 1; id <= 3; id++ {
		p := testbin.NewBroker(t, map[string]string{
			"node.id":                          strconv.Itoa(id),
			"metadata.etcd.endpoints":          etcd.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000",
		}).Start(t)
		addrs = append(addrs, p.Addr)
		procs = append(procs, p)
	}
	eventually(t, "three brokers in the metadata", func() bool { return len(metadata(t, addrs[2]).Brokers) == 3 })
	createTopic(t, addrs[0], "procs", 3)

	cl := testkit.Client(t, "", kgo.SeedBrokers(addrs[1]), kgo.DefaultProduceTopic("procs"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumeTopics("procs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testkit.Context(t, 20*time.Second)
	for p := int32(0); p < 3; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for n < 3 && ctx.Err() == nil {
		n += cl.PollFetches(ctx).NumRecords()
	}
	if n != 3 {
		t.Fatalf("consumed %d of 3 records", n)
	}

	procs[2].Stop(t, syscall.SIGTERM, 10*time.Second)
	eventually(t, "the stopped process gone from the metadata", func() bool {
		for _, b := range metadata(t, addrs[0]).Brokers {
			if strings.HasSuffix(addrs[2], fmt.Sprint(":", b.Port)) {
				return false
			}
		}
		return true
	})
}
