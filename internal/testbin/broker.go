package testbin

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Broker is one broker's files across runs of the binary: Dir holds
// server.properties, kbroker.log (every run's output, appended) and the
// data directory that restarts reuse.
type Broker struct {
	Dir string
	// Props are written to server.properties beside the ones Start
	// chooses (listeners, log.dirs, metrics.listener); node.id is 1
	// unless they set it.
	Props map[string]string
	// SASL adds a SASL_PLAINTEXT listener next to PLAINTEXT.
	SASL bool
	// Isolated adds a listener no other broker has and makes it the
	// inter-broker listener (brokertest.Isolated): the broker serves
	// clients but never fetches as a follower.
	Isolated bool
	// Args follow "serve --config <file>" (e.g. --log-level debug).
	Args []string
}

// NewBroker returns a broker in a fresh directory whose log the test
// prints if it fails.
func NewBroker(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	b := &Broker{Dir: t.TempDir(), Props: props}
	t.Cleanup(func() {
		if t.Failed() {
			b.printLog(t)
		}
	})
	return b
}

// DataDir is the broker's log.dirs.
func (b *Broker) DataDir() string { return filepath.Join(b.Dir, "data") }

// LogPath is the file every run's stdout and stderr are appended to.
func (b *Broker) LogPath() string { return filepath.Join(b.Dir, "kbroker.log") }

// LogSize is the log's current length, to read only what a later run adds.
func (b *Broker) LogSize() int64 {
	fi, err := os.Stat(b.LogPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// printLog logs the tail of the broker log: the directory is gone once
// the test ends, and a CI log has room for the last runs only.
func (b *Broker) printLog(t testing.TB) {
	out, err := os.ReadFile(b.LogPath())
	if err != nil {
		t.Logf("broker log: %v", err)
		return
	}
	const limit = 64 << 10
	if len(out) > limit {
		out = append([]byte("...\n"), out[len(out)-limit:]...)
	}
	t.Logf("broker log (%s):\n%s", b.LogPath(), out)
}

// Proc is one run of "kbroker serve".
type Proc struct {
	Addr        string // the PLAINTEXT listener
	SASLAddr    string // the SASL_PLAINTEXT listener, if Broker.SASL
	MetricsAddr string // /metrics and /debug/pprof

	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	err  error         // cmd.Wait's result, once done is closed
}

// Start runs the binary over the broker's data on free loopback ports and
// waits until it accepts connections. A process still running when the
// test ends is killed; so is one whose test process dies.
func (b *Broker) Start(t testing.TB) *Proc {
	t.Helper()
	bin, err := Kbroker()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		p, err := b.launch(t, bin)
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

// startTimeout is how long a broker may take to listen: recovery of a
// killed broker's logs is part of it, and CI machines are slow.
const startTimeout = 15 * time.Second

func (b *Broker) launch(t testing.TB, bin string) (*Proc, error) {
	n := 3
	if b.Isolated {
		n++
	}
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	p := &Proc{
		Addr:        fmt.Sprintf("127.0.0.1:%d", ports[0]),
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]),
		done:        make(chan struct{}),
	}
	listeners := "PLAINTEXT://" + p.Addr
	if b.SASL {
		p.SASLAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
		listeners += ",SASL_PLAINTEXT://" + p.SASLAddr
	}
	var props strings.Builder
	if b.Isolated {
		listeners += fmt.Sprintf(",ISOLATED://127.0.0.1:%d", ports[3])
		props.WriteString("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,ISOLATED:PLAINTEXT\ninter.broker.listener.name=ISOLATED\n")
	}
	if _, ok := b.Props["node.id"]; !ok {
		props.WriteString("node.id=1\n")
	}
	fmt.Fprintf(&props, "listeners=%s\nlog.dirs=%s\nmetrics.listener=%s\n", listeners, b.DataDir(), p.MetricsAddr)
	for k, v := range b.Props {
		fmt.Fprintf(&props, "%s=%s\n", k, v)
	}
	cfgPath := filepath.Join(b.Dir, "server.properties")
	if err := os.WriteFile(cfgPath, []byte(props.String()), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(b.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "==== %s kbroker serve on %s\n", time.Now().Format(time.RFC3339Nano), listeners)
	logStart, _ := logFile.Seek(0, io.SeekEnd)

	p.cmd = exec.Command(bin, append([]string{"serve", "--config", cfgPath}, b.Args...)...)
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
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.done:
			out, _ := os.ReadFile(b.LogPath())
			return nil, fmt.Errorf("kbroker exited before listening (%v): %s", p.err, out[min(logStart, int64(len(out))):])
		default:
		}
		if c, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond); err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kbroker not listening on %s after %v", p.Addr, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pid is the process id, for /proc.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop sends sig and waits up to timeout for the process to exit,
// returning how long it took.
func (p *Proc) Stop(t testing.TB, sig syscall.Signal, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
		return time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("kbroker still running %v after %v", timeout, sig)
		return 0
	}
}

// Kill9 SIGKILLs the process and waits until it is reaped.
func (p *Proc) Kill9(t testing.TB) {
	t.Helper()
	p.Stop(t, syscall.SIGKILL, 10*time.Second)
}

// Alive fails the test if the process has exited.
func (p *Proc) Alive(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("kbroker exited: %v", p.err)
	default:
	}
}

// ExitCode is the exit status of a process that has exited, or -1 if a
// signal ended it.
func (p *Proc) ExitCode() int {
	<-p.done
	var ee *exec.ExitError
	if p.err == nil {
		return 0
	}
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Err is cmd.Wait's result for a process that has exited.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// handedOut holds every port freePorts has returned in this test process.
// A broker binds some of its ports only later in its start (or again
// after a restart), so a port free now may be one another broker of the
// test is about to bind: it is never handed out twice.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePorts asks the OS for n distinct loopback ports free right now and
// not handed out before.
func freePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("no loopback port free that was not handed out already")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close() // held until all n are picked, so they differ
		port := ln.Addr().(*net.TCPAddr).Port
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}
