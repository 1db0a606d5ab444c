package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind names a broker implementation.
type Kind string

const (
	// Kbroker is this project's broker, cmd/kbroker.
	Kbroker Kind = "kbroker"
	// Kfake is franz-go's in-memory fake cluster, run by bench/cmd/kfakeserver.
	Kfake Kind = "kfake"
)

// ParseKind accepts the -a/-b flag values.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Kbroker, Kfake:
		return k, nil
	}
	return "", fmt.Errorf("unknown broker %q (want kbroker or kfake)", s)
}

// Binaries are the built executables for each kind.
type Binaries struct {
	Kbroker     string
	KfakeServer string
}

// Broker is one running broker process.
type Broker struct {
	Kind Kind
	Addr string
	// MetricsAddr is kbroker's metrics listener (Prometheus and pprof), set
	// when StartOptions.Metrics asked for one.
	MetricsAddr string
	// SASLAddr is the SASL_PLAINTEXT listener, if StartOptions asked for one.
	SASLAddr string
	// Started is when the process was exec'd; Ready when it first answered.
	Started, Ready time.Time
	child          *Child
	dir            string
	keep           bool
	log            *os.File
	opts           StartOptions
}

// StartOptions adjust a kbroker start (kfake ignores them, but for
// KfakeConfigs).
type StartOptions struct {
	// KfakeConfigs are kfake broker configs (key=value, kfake.BrokerConfigs)
	// for a kfake start.
	KfakeConfigs []string
	// Dir is the broker's directory (properties, log, data). Empty: a fresh
	// temporary one, removed by Stop. Given: used as is and kept, so a
	// later start on the same Dir is a restart with the same data.
	Dir string
	// Props are extra server.properties lines (key=value).
	Props []string
	// Metrics sets metrics.listener to a free loopback port, which also
	// serves /debug/pprof.
	Metrics bool
	// SASLPlaintext adds a SASL_PLAINTEXT listener on a second free port
	// (Broker.SASLAddr); SASL settings go in Props.
	SASLPlaintext bool
	// Port is the PLAINTEXT listener's port; 0 picks a free one. A broker
	// restarted on its old port keeps the address clients and other
	// brokers already know (the replication cases restart killed brokers).
	Port int
	// NoWait returns as soon as the process is started, without waiting
	// for it to answer (the caller times the start itself).
	NoWait bool
}

// startTimeout bounds how long a broker may take from exec to answering
// metadata. Both brokers start in well under a second; the slack is for a
// box busy compiling.
const startTimeout = 30 * time.Second

// Start runs a fresh broker of the given kind with its own directory under
// tmp and waits until it answers a metadata request.
func Start(ctx context.Context, kind Kind, bins Binaries, tmp string) (*Broker, error) {
	return StartWith(ctx, kind, bins, tmp, StartOptions{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, kind Kind, bins Binaries, tmp string, o StartOptions) (*Broker, error) {
	dir, keep := o.Dir, o.Dir != ""
	var err error
	if keep {
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp(tmp, string(kind)+"-")
	}
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		if !keep {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	b := &Broker{Kind: kind, dir: dir, keep: keep, log: logf, opts: o}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	switch kind {
	case Kfake:
		err = b.startKfake(ctx, bins.KfakeServer)
	case Kbroker:
		err = b.startKbroker(ctx, bins.Kbroker)
	default:
		err = fmt.Errorf("unknown broker kind %q", kind)
	}
	if err == nil && !o.NoWait {
		err = waitReady(ctx, b)
		b.Ready = time.Now()
	}
	if err != nil {
		tail := b.LogTail(2000)
		b.Stop()
		return nil, fmt.Errorf("%s: %w\n--- broker log tail ---\n%s", kind, err, tail)
	}
	return b, nil
}

// kfakeserver picks its own port and prints its address as the first line
// of stdout, so there is no window in which another process can take it.
func (b *Broker) startKfake(ctx context.Context, bin string) error {
	args := []string{"-port", "0"}
	for _, kv := range b.opts.KfakeConfigs {
		args = append(args, "-config", kv)
	}
	c, stdout, err := StartChild(bin, args, nil, b.log)
	if err != nil {
		return err
	}
	b.child = c
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(b.log, r) // keep draining so the child never blocks on a full pipe
	}()
	select {
	case line := <-lines:
		if _, _, err := net.SplitHostPort(line); err != nil {
			return fmt.Errorf("kfakeserver printed %q, want host:port", line)
		}
		b.Addr = line
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for kfakeserver address: %w", ctx.Err())
	}
}

// kbroker is told its port in its properties file, so we reserve one by
// binding :0 and releasing it. Another process could grab it in between;
// on a benchmark box that is rare and shows up as a start failure.
func (b *Broker) startKbroker(_ context.Context, bin string) error {
	port, err := b.opts.Port, error(nil)
	if port == 0 {
		port, err = freePort()
	}
	if err != nil {
		return err
	}
	b.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	props := filepath.Join(b.dir, "server.properties")
	listeners := "PLAINTEXT://" + b.Addr
	if b.opts.SASLPlaintext {
		sport, err := freePort()
		if err != nil {
			return err
		}
		b.SASLAddr = fmt.Sprintf("127.0.0.1:%d", sport)
		listeners += ",SASL_PLAINTEXT://" + b.SASLAddr
	}
	lines := []string{
		"listeners=" + listeners,
		"advertised.listeners=" + listeners,
		"log.dirs=" + filepath.Join(b.dir, "data"),
		"node.id=1",
		"num.partitions=1",
		"auto.create.topics.enable=true",
	}
	if b.opts.Metrics {
		mport, err := freePort()
		if err != nil {
			return err
		}
		b.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", mport)
		lines = append(lines, "metrics.listener="+b.MetricsAddr)
	}
	lines = append(lines, b.opts.Props...)
	content := strings.Join(append(lines, ""), "\n")
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		return err
	}
	b.Started = time.Now()
	c, stdout, err := StartChild(bin, []string{"serve", "--config", props}, nil, b.log)
	if err != nil {
		return err
	}
	b.child = c
	go io.Copy(b.log, stdout)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Pid is the broker process id.
func (b *Broker) Pid() int { return b.child.Pid() }

// Signal sends sig to the broker process (not its process group): the
// replication cases kill -9 a leader, or SIGTERM it for a controlled
// shutdown, and wait on Exited.
func (b *Broker) Signal(sig syscall.Signal) error { return syscall.Kill(b.Pid(), sig) }

// Port is the PLAINTEXT listener's port.
func (b *Broker) Port() int {
	_, p, _ := net.SplitHostPort(b.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Exited is closed if the broker process dies.
func (b *Broker) Exited() <-chan struct{} { return b.child.Done() }

// Stop terminates the broker and removes its directory (log segments
// included), so disk use does not grow over a job.
func (b *Broker) Stop() {
	if b.child != nil {
		b.child.Stop(5 * time.Second)
	}
	b.log.Close()
	if !b.keep {
		os.RemoveAll(b.dir)
	}
}

// Dir is the broker's directory.
func (b *Broker) Dir() string { return b.dir }

// LogTail returns up to n trailing bytes of the broker's stdout+stderr, for
// error messages.
func (b *Broker) LogTail(n int64) string {
	data, err := os.ReadFile(b.log.Name())
	if err != nil {
		return ""
	}
	if int64(len(data)) > n {
		data = data[int64(len(data))-n:]
	}
	return string(data)
}
