package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"kbroker/broker"
	"kbroker/internal/config"
	"kbroker/internal/logging"
)

// overrides collects repeated --override key=value flags, as
// kafka-server-start.sh takes them.
type overrides []string

func (o *overrides) String() string     { return strings.Join(*o, ",") }
func (o *overrides) Set(v string) error { *o = append(*o, v); return nil }

const serveSynopsis = `kbroker serve [--config server.properties] [--override key=value ...] [--log-level level]`

const serveExamples = `  kbroker serve --config server.properties --override log.dirs=/var/lib/kbroker
  kbroker serve server.properties
`

func serve(args []string) error {
	fs := newFlagSet("serve", serveSynopsis, serveExamples, os.Stdout)
	path := fs.String("config", "", "server.properties `file` (Apache Kafka syntax and keys)")
	var ov overrides
	fs.Var(&ov, "override", "`key=value` that replaces a server.properties entry (repeatable)")
	logLevel := fs.String("log-level", "INFO", "root log `level`: TRACE, DEBUG, INFO, WARN, ERROR or FATAL")
	if err := parseFlagsAndArgs(fs, args, os.Stdout); err != nil {
		return err
	}
	if fs.NArg() == 1 && *path == "" { // kafka-server-start.sh style: the file as the argument
		*path = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	props := config.Properties{}
	if *path != "" {
		var err error
		if props, err = config.LoadProperties(*path); err != nil {
			return err
		}
	}
	for _, kv := range ov {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--override %q: want key=value", kv)
		}
		props[strings.TrimSpace(k)] = v
	}
	tuneGC()
	level, err := logging.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// The handler passes everything; the broker's loggers filter, so levels
	// can be changed at runtime (BROKER_LOGGER).
	handler := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug - 4})
	b, err := broker.New(props, broker.WithLogHandler(handler, level))
	if err != nil {
		return err
	}
	// Signals are caught from before Start: a SIGTERM while the broker
	// starts (recovering logs, waiting for the controller) then stops it
	// cleanly once it has started, instead of killing it as Go's default
	// would, which the next start would take for a crash.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	if err := b.Start(); err != nil {
		return err
	}
	s := <-sig
	b.Logger().Info("shutting down", "signal", s.String())
	// Leadership moves off the broker before it stops (Kafka's controlled
	// shutdown), bounded as Kafka bounds it; a second signal stops at once.
	ctx, cancel := context.WithTimeout(context.Background(), broker.ControlledShutdownTimeout)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := b.ControlledShutdown(ctx); err != nil {
		// The broker stops all the same: its partitions then move when
		// its registration goes, as after a crash.
		b.Logger().Error("controlled shutdown failed", "err", err)
	}
	cancel()
	return b.Close()
}

// brokerGCPercent is the garbage collector's target when the operator sets
// no GOGC. A broker's live heap is small (records live in the page cache,
// not the heap), so Go's default of 100 collects very often under load, and
// each cycle shows up in tail latency; 400 trades a few more megabytes of
// heap for far fewer cycles (BENCHMARKS.md, B3).
const brokerGCPercent = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(brokerGCPercent)
	}
}
