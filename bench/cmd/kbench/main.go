// Command kbench measures kbroker against franz-go's kfake, side by side in
// one job: produce throughput (B1), fetch throughput (B2) and serial produce
// latency (B3), with the loopback TCP floors measured in the same job. See
// BENCHMARKS.md at the repository root.
//
// Each side is a separate broker process on 127.0.0.1, started fresh for each
// run; the load is the franz-go kgo client in a fresh worker process per run
// (kbench re-executing itself). The Markdown report goes to stdout, progress
// to stderr.
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
	"kbroker/bench/workload"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "worker" {
		os.Exit(runWorker(os.Args[2]))
	}
	os.Exit(run())
}

type options struct {
	a, b, ours, root, jsonPath string
	peerOnly, quick            bool
	prefaultBytes              int64
	pc                         planConfig
	suite                      string      // "throughput" (B1–B3) or "admin" (B4–B9)
	ad                         adminConfig // the admin suite's knobs
	prefaultSet                bool        // -prefault-gib given explicitly
	holdGuestPages             bool        // suspend free-page reporting for the job (guestpages.go)
}

func parseFlags() (options, error) {
	var o options
	var preloadMiB, fetchMaxMiB int
	var only string
	var prefaultGiB int
	flag.StringVar(&o.a, "a", "kbroker", "side A broker: kbroker or kfake")
	flag.StringVar(&o.b, "b", "kfake", "side B broker: kbroker or kfake (ratios are A ÷ B)")
	flag.BoolVar(&o.peerOnly, "peer-only", false, "self-check: kfake on both sides (same as -a kfake -b kfake)")
	flag.StringVar(&o.ours, "ours", "", "prebuilt kbroker binary, run as `<bin> serve --config <file>` (default: go build ./cmd/kbroker)")
	flag.StringVar(&o.root, "root", "", "kbroker module root (default: found from the current directory)")
	flag.BoolVar(&o.quick, "quick", false, "smoke run: 1 pair, 1 s runs, 32 MiB preload (explicit flags still win)")
	flag.IntVar(&o.pc.pairs, "pairs", 6, "number of pairs; the order alternates A-B, B-A, so keep it even")
	flag.DurationVar(&o.pc.produceDur, "duration", 5*time.Second, "B1 measured window per run")
	flag.DurationVar(&o.pc.latencyDur, "latency-duration", 5*time.Second, "B3 measured window per run")
	flag.DurationVar(&o.pc.warmup, "warmup", time.Second, "unmeasured warm-up before each B1 window (B3 uses half)")
	flag.IntVar(&preloadMiB, "preload-mib", 1024, "B2 payload to preload and fetch, MiB")
	flag.IntVar(&fetchMaxMiB, "fetch-max-mib", 64, "B2 FetchMaxBytes and FetchMaxPartitionBytes, MiB")
	flag.DurationVar(&o.pc.loopbackDur, "loopback", 2*time.Second, "loopback floor measurement per pair (split stream / ping-pong)")
	flag.IntVar(&prefaultGiB, "prefault-gib", 8, "touch this much memory once before measuring (fresh VM guests pay extra on first touch)")
	flag.BoolVar(&o.holdGuestPages, "hold-guest-pages", true, "on a VM guest with free-page reporting, suspend it for the job (root only; restored at exit) so freed pages stay backed as on bare metal")
	flag.StringVar(&only, "cases", "", "comma-separated case prefixes to run, e.g. \"B1 1KiB,B3\" (default: all)")
	flag.StringVar(&o.jsonPath, "json", "", "also write every run and the summary as JSON to this file")
	flag.StringVar(&o.suite, "suite", "throughput", "throughput: B1–B3 against kfake; admin: quotas, configs and admin scale (B4–B9), kbroker only")
	registerAdminFlags(&o.ad)
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { o.prefaultSet = o.prefaultSet || f.Name == "prefault-gib" })

	if o.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		quick("pairs", func() { o.pc.pairs = 1 })
		quick("duration", func() { o.pc.produceDur = time.Second })
		quick("latency-duration", func() { o.pc.latencyDur = time.Second })
		quick("warmup", func() { o.pc.warmup = 300 * time.Millisecond })
		quick("preload-mib", func() { preloadMiB = 32 })
		quick("loopback", func() { o.pc.loopbackDur = 500 * time.Millisecond })
		quick("prefault-gib", func() { prefaultGiB = 0 })
		quick("b2m-rounds", func() { *b2mRounds = 5 })
		o.ad.applyQuick(set)
	}
	if o.peerOnly {
		o.a, o.b = string(broker.Kfake), string(broker.Kfake)
	}
	if o.suite != "throughput" && o.suite != "admin" {
		return o, fmt.Errorf("-suite %q: want throughput or admin", o.suite)
	}
	if o.pc.pairs < 1 || preloadMiB < 1 || fetchMaxMiB < 1 || fetchMaxMiB > 1024 {
		return o, errors.New("-pairs and -preload-mib must be ≥ 1, -fetch-max-mib in 1..1024")
	}
	if only != "" {
		o.pc.only = strings.Split(only, ",")
	}
	o.prefaultBytes = int64(prefaultGiB) << 30
	o.pc.preloadBytes = int64(preloadMiB) << 20
	o.pc.fetchMax = int32(fetchMaxMiB) << 20
	return o, nil
}

func run() int {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 2
	}
	if o.suite == "admin" {
		return runAdminSuite(o)
	}
	a, errA := broker.ParseKind(o.a)
	b, errB := broker.ParseKind(o.b)
	if err := errors.Join(errA, errB); err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 2
	}

	// Ctrl-C and SIGTERM cancel the job; the deferred cleanup below then
	// stops every child and removes the temp dir before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "kbench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer broker.KillAll()
	// Before the prefault, so that the pages it touches stay backed.
	gp := holdGuestPages(o.holdGuestPages)
	if gp.restore != nil {
		defer gp.restore()
	}

	r, root, err := setup(ctx, o, a, b, tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 1
	}
	m := describeMachine()
	m.Tree = treeState(root)
	m.GuestPages = gp.state
	cmdline := "go run ./bench/cmd/kbench " + strings.Join(os.Args[1:], " ")
	fmt.Fprintf(os.Stderr, "kbench: a=%s b=%s, %d pairs; temp dir %s\n", a, b, o.pc.pairs, tmp)

	began := time.Now()
	res := runPlan(ctx, r, o.pc, a, b)
	took := time.Since(began)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "kbench: interrupted; reporting what was measured")
	}
	rows := summarize(res, o.pc)
	writeMarkdown(os.Stdout, m, strings.TrimSpace(cmdline), a, b, o.pc, res, rows, took)
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, m, cmdline, a, b, o.pc.pairs, res, rows); err != nil {
			fmt.Fprintln(os.Stderr, "kbench: json:", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

// setup builds the broker binaries the job needs, once, before anything is
// measured.
func setup(ctx context.Context, o options, a, b broker.Kind, tmp string) (*runner, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	root := o.root
	if root == "" {
		if root, err = moduleRoot(); err != nil {
			return nil, "", err
		}
	}
	r := &runner{self: self, tmp: tmp, profileDir: o.ad.profileDir}
	if r.profileDir != "" {
		if err := os.MkdirAll(r.profileDir, 0o755); err != nil {
			return nil, "", err
		}
	}
	need := map[broker.Kind]bool{a: true, b: true}
	if need[broker.Kfake] {
		fmt.Fprintln(os.Stderr, "kbench: building ./bench/cmd/kfakeserver")
		if r.bins.KfakeServer, err = broker.Build(ctx, root, "./bench/cmd/kfakeserver", tmp); err != nil {
			return nil, "", err
		}
	}
	if need[broker.Kbroker] {
		if o.ours != "" {
			if r.bins.Kbroker, err = filepath.Abs(o.ours); err != nil {
				return nil, "", err
			}
		} else {
			fmt.Fprintln(os.Stderr, "kbench: building ./cmd/kbroker")
			if r.bins.Kbroker, err = broker.Build(ctx, root, "./cmd/kbroker", tmp); err != nil {
				return nil, "", err
			}
		}
	}
	if o.prefaultBytes > 0 {
		spec := workload.Spec{Kind: workload.KindPrefault, PreloadBytes: o.prefaultBytes}
		res, _, _, err := r.runLoad(ctx, spec, nil)
		if err != nil {
			return nil, "", fmt.Errorf("prefault: %w", err)
		}
		fmt.Fprintf(os.Stderr, "kbench: prefaulted %d GiB in %.1fs\n", res.Bytes>>30, res.Seconds)
	}
	return r, root, nil
}

// moduleRoot finds the kbroker module containing the current directory, so
// kbench can be run from anywhere inside the repository.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module; run from the kbroker repository or pass -root")
	}
	return filepath.Dir(gomod), nil
}
