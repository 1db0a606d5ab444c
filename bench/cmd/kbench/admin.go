package main

// The admin suite (-suite admin): benchmarks B4–B9 of the performance
// anchors against kbroker alone (kfake does not enforce quotas), each run on
// a fresh kbroker process started with its own server.properties. The load
// runs in this process (package bench/admin), except B9(a), which reuses
// B1's produce workload in a worker process.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"kbroker/bench/broker"
)

// adminConfig are the admin suite's knobs.
type adminConfig struct {
	runs       int           // repeated runs of B4, B5, B7, B8 (medians reported)
	quotaDur   time.Duration // B4 and B5 run length
	cycles     int           // B6 quota changes
	connDur    time.Duration // B7 dial loop
	mutDur     time.Duration // B8 create loop
	entities   int           // B9 quota entities
	topics     int           // B9 topics with overrides
	b9Pairs    int           // B9(a) pairs
	reps       int           // B9 describe repetitions
	alters     int           // B9 alter repetitions
	coldStarts int           // B9 cold starts
	acls       int           // ACL case: ACLs loaded
	aclPairs   int           // ACL case: pairs of produce runs
	profileDir string        // write broker CPU profiles here
	repl       replConfig    // R1–R3 (admin_repl.go)
}

func registerAdminFlags(c *adminConfig) {
	flag.IntVar(&c.runs, "runs", 3, "admin suite: runs per case of B4, B5, B7, B8 (medians are reported)")
	flag.DurationVar(&c.quotaDur, "quota-duration", 20*time.Second, "admin suite: B4/B5 run length (the steady window starts at 10 s)")
	flag.IntVar(&c.cycles, "cycles", 100, "admin suite: B6 quota changes (2 → 0.5 MiB/s and back)")
	flag.DurationVar(&c.connDur, "conn-duration", 13*time.Second, "admin suite: B7 dial loop length")
	flag.DurationVar(&c.mutDur, "mutation-duration", 20*time.Second, "admin suite: B8 create-topics loop length")
	flag.IntVar(&c.entities, "entities", 20000, "admin suite: B9 quota entities loaded (the issue 4 goal is stated at 100000)")
	flag.IntVar(&c.topics, "topics", 10000, "admin suite: B9 topics with config overrides")
	flag.IntVar(&c.b9Pairs, "b9-pairs", 3, "admin suite: B9(a) pairs of produce runs, without and with the entities")
	flag.IntVar(&c.reps, "reps", 20, "admin suite: B9 DescribeClientQuotas / DescribeConfigs repetitions")
	flag.IntVar(&c.alters, "alters", 200, "admin suite: B9 IncrementalAlterConfigs / AlterConfigs repetitions")
	flag.IntVar(&c.coldStarts, "cold-starts", 5, "admin suite: B9 broker restarts timed")
	flag.IntVar(&c.acls, "acls", 10000, "admin suite: ACLs loaded for the ACL produce case")
	flag.IntVar(&c.aclPairs, "acl-pairs", 3, "admin suite: ACL case pairs of produce runs, without and with the authorizer and its ACLs")
	c.registerReplFlags()
	flag.StringVar(&c.profileDir, "profile", "", "directory for kbroker CPU profiles (pprof on metrics.listener): one per measured case (admin suite) or per measured kbroker run (throughput suite)")
}

func (c *adminConfig) applyQuick(set map[string]bool) {
	q := func(name string, apply func()) {
		if !set[name] {
			apply()
		}
	}
	q("runs", func() { c.runs = 1 })
	q("quota-duration", func() { c.quotaDur = 12 * time.Second })
	q("cycles", func() { c.cycles = 10 })
	q("conn-duration", func() { c.connDur = 3 * time.Second })
	q("mutation-duration", func() { c.mutDur = 5 * time.Second })
	q("entities", func() { c.entities = 5000 })
	q("topics", func() { c.topics = 500 })
	q("b9-pairs", func() { c.b9Pairs = 1 })
	q("reps", func() { c.reps = 5 })
	q("alters", func() { c.alters = 20 })
	q("cold-starts", func() { c.coldStarts = 2 })
	q("acl-pairs", func() { c.aclPairs = 1 })
	c.applyReplQuick(q)
}

// adminSuite runs the admin cases.
type adminSuite struct {
	o    options
	r    *runner
	tmp  string
	out  io.Writer
	json map[string]any
}

// section is one benchmark's report.
type section struct {
	id, title string
	body      strings.Builder
}

func (s *section) printf(format string, args ...any) { fmt.Fprintf(&s.body, format, args...) }

func runAdminSuite(o options) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "kbench-admin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer broker.KillAll()
	if !o.prefaultSet {
		o.prefaultBytes = 0 // kbroker against kbroker: no first-touch bias between sides
	}
	// The replication cases write and copy logs as B2 does, so they hold
	// freed guest pages backed as the throughput suite does (guestpages.go).
	guest := ""
	if selectedID("R1", o.pc.only) || selectedID("R2", o.pc.only) || selectedID("R3", o.pc.only) {
		gp := holdGuestPages(o.holdGuestPages)
		if gp.restore != nil {
			defer gp.restore()
		}
		guest = gp.state
	}
	r, root, err := setup(ctx, o, broker.Kbroker, broker.Kbroker, tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		return 1
	}
	if o.ad.profileDir != "" {
		if err := os.MkdirAll(o.ad.profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "kbench:", err)
			return 1
		}
	}
	m := describeMachine()
	m.Tree = treeState(root)
	s := &adminSuite{o: o, r: r, tmp: tmp, out: os.Stdout, json: map[string]any{}}
	cmdline := "go run ./bench/cmd/kbench " + strings.Join(os.Args[1:], " ")
	began := time.Now()

	type adminCase struct {
		id  string
		run func(context.Context, *section) error
	}
	all := []adminCase{
		{"B4 producer", s.caseB4},
		{"B4 sim", func(ctx context.Context, sec *section) error { return s.caseSim(ctx, sec, root) }},
		{"B5 consumer", s.caseB5},
		{"B6 propagation", s.caseB6},
		{"B6 etcd", s.caseB6Etcd},
		{"B7 connections", s.caseB7},
		{"B8 mutations", s.caseB8},
		{"B9 quotas", s.caseB9Quotas},
		{"B9 configs", s.caseB9Configs},
		{"SCRAM", s.caseSCRAM},
		{"ACL produce", s.caseACLProduce},
		{"G4 groups", s.caseG4},   // admin_groups.go
		{"R1 acks=all", s.caseR1}, // admin_repl.go
		{"R2 leader stop", s.caseR2},
		{"R3 catch-up", s.caseR3},
	}
	var secs []*section
	for _, c := range all {
		if !selectedID(c.id, o.pc.only) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		sec := &section{id: c.id}
		fmt.Fprintf(os.Stderr, "kbench: %s\n", c.id)
		t0 := time.Now()
		if err := c.run(ctx, sec); err != nil {
			sec.printf("\n**Failed**: `%s`\n", oneLine(err.Error()))
			fmt.Fprintf(os.Stderr, "kbench: %s failed: %v\n", c.id, err)
		}
		sec.printf("\n_(%s took %s)_\n", c.id, time.Since(t0).Round(time.Second))
		secs = append(secs, sec)
	}
	took := time.Since(began)

	fmt.Fprintf(s.out, "### kbench admin suite, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(s.out, "- Command: `%s` (took %s)\n", strings.TrimSpace(cmdline), took.Round(time.Second))
	fmt.Fprintf(s.out, "- Machine: %d CPUs, %s, %s RAM, Linux %s, %s\n", m.NumCPU, m.CPUModel, m.MemTotal, m.Kernel, m.Go)
	fmt.Fprintf(s.out, "- Tree: %s\n", m.Tree)
	if guest != "" {
		fmt.Fprintf(s.out, "- Guest memory: %s\n", guest)
	}
	fmt.Fprintf(s.out, "- Every run on a fresh kbroker process (bbolt metadata store), client and broker on loopback sharing the cores\n")
	for _, sec := range secs {
		fmt.Fprintf(s.out, "\n#### %s\n\n%s", sec.title, sec.body.String())
	}
	if o.jsonPath != "" {
		data, _ := json.MarshalIndent(map[string]any{"time": time.Now().UTC(), "command": cmdline, "machine": m, "results": s.json}, "", "  ")
		if err := os.WriteFile(o.jsonPath, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kbench: json:", err)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

func selectedID(id string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, p := range only {
		if strings.HasPrefix(id, strings.TrimSpace(p)) {
			return true
		}
	}
	return false
}

// start runs a fresh kbroker with extra properties.
func (s *adminSuite) start(ctx context.Context, props ...string) (*broker.Broker, error) {
	return broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{
		Props: props, Metrics: s.o.ad.profileDir != "",
	})
}

// profile fetches a CPU profile of the broker for seconds in the
// background, if -profile is set; wait blocks until it is written.
func (s *adminSuite) profile(ctx context.Context, b *broker.Broker, name string, seconds int) (wait func()) {
	if s.o.ad.profileDir == "" || b.MetricsAddr == "" || seconds < 1 {
		return func() {}
	}
	path := filepath.Join(s.o.ad.profileDir, strings.NewReplacer(" ", "-", "/", "-").Replace(name)+".pprof")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.CPUProfile(ctx, seconds, path); err != nil {
			fmt.Fprintf(os.Stderr, "kbench: profile %s: %v\n", name, err)
			return
		}
		fmt.Fprintf(os.Stderr, "kbench: profile written to %s\n", path)
	}()
	return func() { <-done }
}

// verdict marks a goal.
func verdict(met bool) string {
	if met {
		return "**met**"
	}
	return "**not met**"
}
