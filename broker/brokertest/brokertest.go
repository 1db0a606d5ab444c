// Package brokertest starts real kbroker brokers for tests: in-process, on
// 127.0.0.1 with an OS-chosen port, with their data in the test's temporary
// directory, closed when the test ends.
package brokertest

import (
	"log/slog"
	"os"
	"testing"

	"kbroker/broker"
	"kbroker/internal/config"
)

// Start runs a broker with props layered over test defaults (a loopback
// listener on port 0, log.dirs in t.TempDir()).
func Start(t testing.TB, props config.Properties, opts ...broker.Option) *broker.Broker {
	t.Helper()
	all := config.Properties{
		"listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs":  t.TempDir(),
	}
	for k, v := range props {
		all[k] = v
	}
	return StartWith(t, all, opts...)
}

// StartWith runs a broker with exactly props (for restarts over the same
// log.dirs). Set KBROKER_TEST_LOG=1 to see its logs.
func StartWith(t testing.TB, props config.Properties, opts ...broker.Option) *broker.Broker {
	t.Helper()
	if os.Getenv("KBROKER_TEST_LOG") != "" {
		opts = append(opts, broker.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	b, err := broker.New(props, opts...)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	})
	return b
}

// Isolated is the configuration of a cluster broker that serves clients
// but never fetches as a follower: its inter-broker listener is a second
// listener of its own, which no other broker has, so it finds no endpoint
// of any leader to fetch from (the other brokers still reach it on
// PLAINTEXT). Layer it over a broker's props.
func Isolated() config.Properties {
	return config.Properties{
		"listeners":                      "PLAINTEXT://127.0.0.1:0," + IsolatedListener + "://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT," + IsolatedListener + ":PLAINTEXT",
		"inter.broker.listener.name":     IsolatedListener,
	}
}

// IsolatedListener is the name of Isolated's inter-broker listener.
const IsolatedListener = "ISOLATED"
