// Command soak runs the kbroker binary for a long time under a realistic
// secured load and reports whether it stays healthy:
//
//	go run ./bench/soak -duration 10m
//
// The broker gets a SASL_PLAINTEXT listener with SCRAM users (an admin
// bootstrapped from kbroker.scram.bootstrap.users, the rest created over
// the protocol), the built-in authorizer with prefixed ACLs, and client
// quotas. Hundreds of franz-go producers and consumers, each its own client
// and connections, authenticate with SCRAM-SHA-512 and stream records while
// the admin alters topic and cluster configs, toggles a producer quota,
// creates and deletes an ACL, rotates a SCRAM credential and recycles some
// clients (new connections, new handshakes). A user without ACLs and a
// wrong password try their luck at every change.
//
// Every sample interval it records throughput, how close the quota'd users
// run to their quotas, and the broker's goroutines, RSS and open connections
// from its /metrics. The Markdown report (stdout) ends with a verdict:
// memory and goroutines must be flat after the warm-up, nobody may get in,
// and the broker's goroutines must return to their starting count once the
// clients are gone. The exit status is 1 when any check fails. Progress goes
// to stderr. See BENCHMARKS.md, "Soak".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"kbroker/bench/broker"
)

type options struct {
	duration, warmup, sample, changeEvery time.Duration
	producers, consumers                  int
	rate, recordSize                      int
	topics, partitions                    int
	producerQuota, consumerQuota          int // bytes/s of the quota'd users
	churn                                 int
	ours                                  string
	profiles                              string // directory for the broker's heap and goroutine profiles
}

func parseFlags() options {
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the load runs")
	flag.DurationVar(&o.warmup, "warmup", 0, "samples before this are left out of the growth checks (default: a quarter of -duration, at most 2m)")
	flag.DurationVar(&o.sample, "sample", 10*time.Second, "sample interval")
	flag.DurationVar(&o.changeEvery, "change-every", 15*time.Second, "interval between rounds of config, quota, ACL and SCRAM changes")
	flag.IntVar(&o.producers, "producers", 200, "producer clients (a quarter of them under a producer quota)")
	flag.IntVar(&o.consumers, "consumers", 200, "consumer clients (a quarter of them under a consumer quota)")
	flag.IntVar(&o.rate, "rate", 10, "records per second per producer")
	flag.IntVar(&o.recordSize, "record-size", 1024, "record value bytes")
	flag.IntVar(&o.topics, "topics", 8, "topics")
	flag.IntVar(&o.partitions, "partitions", 4, "partitions per topic")
	flag.IntVar(&o.producerQuota, "producer-quota", 64<<10, "producer_byte_rate of the quota'd producers' user (toggled with twice this value)")
	flag.IntVar(&o.consumerQuota, "consumer-quota", 512<<10, "consumer_byte_rate of the quota'd consumers' user")
	flag.IntVar(&o.churn, "churn", 5, "producers and consumers each closed and replaced at every change round")
	flag.StringVar(&o.ours, "ours", "", "prebuilt kbroker binary (default: go build ./cmd/kbroker)")
	flag.StringVar(&o.profiles, "profiles", "", "directory to save the broker's heap profiles in (at the end of the warm-up and of the run) and its goroutines (end of the run)")
	flag.Parse()
	if o.warmup == 0 {
		o.warmup = min(o.duration/4, 2*time.Minute)
	}
	return o
}

func main() {
	o := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer broker.KillAll()
	ok, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run starts the broker, sets it up, runs the load and reports; ok is the
// verdict.
func run(ctx context.Context, o options) (ok bool, err error) {
	tmp, err := os.MkdirTemp("", "kbroker-soak-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	bin := o.ours
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return false, err
		}
		progress("building ./cmd/kbroker")
		if bin, err = broker.Build(ctx, root, "./cmd/kbroker", tmp); err != nil {
			return false, err
		}
	}
	b, err := broker.StartWith(ctx, broker.Kbroker, broker.Binaries{Kbroker: bin}, tmp, broker.StartOptions{
		Props: brokerProps(), Metrics: true, SASLPlaintext: true,
	})
	if err != nil {
		return false, err
	}
	defer b.Stop()
	progress("kbroker pid %d: PLAINTEXT %s, SASL_PLAINTEXT %s, metrics %s", b.Pid(), b.Addr, b.SASLAddr, b.MetricsAddr)

	s := &soak{o: o, b: b, started: time.Now()}
	if err := s.setup(ctx); err != nil {
		return false, fmt.Errorf("setup: %w (broker log: %s)", err, b.LogTail(2000))
	}
	if err := s.runLoad(ctx); err != nil {
		return false, fmt.Errorf("%w (broker log: %s)", err, b.LogTail(2000))
	}
	return s.report(os.Stdout), nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module; run from the kbroker repository or pass -ours")
	}
	return filepath.Dir(gomod), nil
}
