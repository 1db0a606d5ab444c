package broker_test

import (
	"log/slog"
	"strings"
	"testing"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// TestTypoedKeyIsWarnedOnceWithTheClosestKey: a misspelt key in
// server.properties (listners=) is logged at WARN, once, naming the key
// it most likely meant, rather than silently leaving listeners at its
// default.
func TestTypoedKeyIsWarnedOnceWithTheClosestKey(t *testing.T) {
	var out testkit.LogBuffer
	h := slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})
	brokertest.Start(t, config.Properties{"listners": "PLAINTEXT://127.0.0.1:0"}, broker.WithLogHandler(h, slog.LevelDebug))
	var lines []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "listners") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d log lines name listners, want exactly one: %q", len(lines), lines)
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "did you mean listeners?") {
		t.Errorf("log line %q: want a WARN saying \"did you mean listeners?\"", lines[0])
	}
}
