package cluster_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/cluster/etcdtest"
)

// startKbrokerProcess runs "kbroker serve" as node id on addr against etcd,
// with its output in the test's log on failure.
func startKbrokerProcess(t *testing.T, bin string, id int, addr, endpoint string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	props := fmt.Sprintf("node.id=%d\nlisteners=PLAINTEXT://%s\nlog.dirs=%s\nmetadata.etcd.endpoints=%s\nmetadata.etcd.session.timeout.ms=2000\n",
		id, addr, filepath.Join(dir, "data"), endpoint)
	cfg := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfg, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kbroker.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logFile.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("kbroker %d log:\n%s", id, out)
		}
	})
	eventually(t, fmt.Sprintf("kbroker %d to listen on %s", id, addr), func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return cmd
}

// TestThreeKbrokerProcessesFormOneCluster is the cluster scenario against
// the built binary: three "kbroker serve" processes and one etcd.
func TestThreeKbrokerProcessesFormOneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kbroker binary")
	}
	bin := filepath.Join(t.TempDir(), "kbroker")
	build := exec.Command("go", "build", "-o", bin, "kbroker/cmd/kbroker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	etcd := etcdtest.Start(t)
	var addrs []string
	var procs []*exec.Cmd
	for id := 1; id <= 3; id++ {
		addr, err := etcdtest.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, addr)
		procs = append(procs, startKbrokerProcess(t, bin, id, addr, etcd.Endpoint()))
	}
	eventually(t, "three brokers in the metadata", func() bool { return len(metadata(t, addrs[2]).Brokers) == 3 })
	createTopic(t, addrs[0], "procs", 3)

	cl := newClient(t, kgo.SeedBrokers(addrs[1]), kgo.DefaultProduceTopic("procs"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumeTopics("procs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, 20*time.Second)
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

	if err := procs[2].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped process gone from the metadata", func() bool {
		for _, b := range metadata(t, addrs[0]).Brokers {
			if strings.HasSuffix(addrs[2], fmt.Sprint(":", b.Port)) {
				return false
			}
		}
		return true
	})
}
