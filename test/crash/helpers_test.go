// Package crash runs the real kbroker binary under the conditions a broker
// meets in production and a unit test cannot make: SIGKILL in the middle of
// admin alterations and produce traffic (every acknowledged change must
// survive, none half-applied), and resource exhaustion by hostile or idle
// clients (memory and connections stay bounded, well-behaved clients are
// still served). The binary is built once per package run; one test runs
// the broker in-process so that -race watches the request memory pool.
package crash

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// brokerDir is where one broker's runs live: server.properties, the log
// of every run, and the data directory that restarts reuse.
type brokerDir struct {
	root  string
	props map[string]string // beyond listeners, log.dirs, node.id
	// sasl adds a SASL_PLAINTEXT listener next to PLAINTEXT.
	sasl bool
}

func (d *brokerDir) dataDir() string { return filepath.Join(d.root, "data") }
func (d *brokerDir) logPath() string { return filepath.Join(d.root, "kbroker.log") }

// newBrokerDir makes a broker directory and prints its log if the test
// fails.
func newBrokerDir(t *testing.T, props map[string]string, sasl bool) *brokerDir {
	t.Helper()
	d := &brokerDir{root: t.TempDir(), props: props, sasl: sasl}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out, err := os.ReadFile(d.logPath())
		if err != nil {
			t.Logf("broker log: %v", err)
			return
		}
		const limit = 48 << 10
		if len(out) > limit {
			out = append([]byte("...\n"), out[len(out)-limit:]...)
		}
		t.Logf("broker log (%s):\n%s", d.logPath(), out)
	})
	return d
}

// proc is one run of the kbroker binary.
type proc struct {
	addr, saslAddr, metricsAddr string
	cmd                         *exec.Cmd
	done                        chan struct{} // closed once the process is reaped
	err                         error         // cmd.Wait's result, once done is closed
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// start runs "kbroker serve" over the directory's data on free loopback
// ports and waits until it accepts connections. A still-running process is
// killed when the test ends.
func (d *brokerDir) start(t *testing.T) *proc {
	t.Helper()
	bin, err := testbin.Kbroker()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		p, err := d.launch(t, bin)
		if err == nil {
			return p
		}
		// A free port can be taken between our probe and the broker's
		// listen; the broker then exits and we try other ports.
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("start kbroker (attempt %d): %v", attempt, err)
		}
	}
}

func (d *brokerDir) launch(t *testing.T, bin string) (*proc, error) {
	p := &proc{done: make(chan struct{})}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	p.addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	p.metricsAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
	listeners := "PLAINTEXT://" + p.addr
	if d.sasl {
		p.saslAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
		listeners += ",SASL_PLAINTEXT://" + p.saslAddr
	}
	var props strings.Builder
	fmt.Fprintf(&props, "node.id=1\nlisteners=%s\nlog.dirs=%s\nmetrics.listener=%s\n", listeners, d.dataDir(), p.metricsAddr)
	for k, v := range d.props {
		fmt.Fprintf(&props, "%s=%s\n", k, v)
	}
	cfgPath := filepath.Join(d.root, "server.properties")
	if err := os.WriteFile(cfgPath, []byte(props.String()), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(d.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "==== %s kbroker serve on %s\n", time.Now().Format(time.RFC3339Nano), listeners)
	logStart, _ := logFile.Seek(0, io.SeekEnd)

	p.cmd = exec.Command(bin, "serve", "--config", cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.done:
			out, _ := os.ReadFile(d.logPath())
			return nil, fmt.Errorf("kbroker exited before listening (%v): %s", p.err, out[min(logStart, int64(len(out))):])
		default:
		}
		if c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kbroker not listening on %s after 15s", p.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill9 SIGKILLs the process and waits until it is reaped.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("kbroker still running 10s after SIGKILL")
	}
}

// alive fails the test if the broker has exited.
func (p *proc) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("kbroker exited: %v", p.err)
	default:
	}
}

// freePorts asks the OS for n distinct loopback ports free right now.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// scrape reads the broker's /metrics and returns the unlabelled samples
// and the sum over labels of the labelled ones, by metric name.
func (p *proc) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Labels may hold spaces; the value follows the closing brace.
			j := strings.LastIndexByte(line, '}')
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err == nil {
			out[name] += v
		}
	}
	return out
}

// statusBytes reads a "VmRSS:"-style line of /proc/<pid>/status, in bytes.
func (p *proc) statusBytes(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		t.Fatalf("read /proc status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatalf("parse %s: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.pid())
	return 0
}

// newClient returns a franz-go client for addr, closed when the test ends.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testContext is a context bounded by d, cancelled when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic with partitions and optional configs.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testContext(t, 10*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// waitFor polls cond every 50ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isClosedByPeer reports whether err means the other side closed.
func isClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
