// Package dynconfigtest builds, for tests, the dynamic configuration of
// broker 1 over a real metadata store (a bbolt file in a test directory).
package dynconfigtest

import (
	"log/slog"
	"path/filepath"
	"testing"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/policy"
)

// Broker is what Open builds.
type Broker struct {
	Config  *config.Broker
	Store   *meta.Store
	Configs *dynconfig.Configs
	Dir     string // its log directory, which holds the store
}

// Open starts broker 1's store and dynamic configuration, with alter as
// its alter-config policy (nil: none); the store closes when the test ends.
func Open(t *testing.T, alter policy.AlterConfig) *Broker {
	t.Helper()
	dir := t.TempDir()
	b, err := config.NewBroker(config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	backend, err := meta.OpenBolt(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	store, err := meta.Open(backend, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	configs := dynconfig.New(dynconfig.Options{Broker: b, Store: store, Policy: alter, Logger: discard, Audit: discard})
	return &Broker{Config: b, Store: store, Configs: configs, Dir: dir}
}
