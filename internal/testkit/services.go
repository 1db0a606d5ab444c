package testkit

import (
	"log/slog"
	"testing"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/storage"
)

// BrokerBase is what a single broker's data-path services stand on when a
// test runs them without a broker around them: broker 1's configuration,
// a bbolt metadata store (BoltStore), its dynamic configs and a storage
// manager over one log directory, in the test's temporary directories and
// closed when the test ends. It stops below the services built on it
// (replica.New, api.New), so that their in-package tests can use it
// without an import cycle.
type BrokerBase struct {
	Config  *config.Broker
	Store   *meta.Store
	Configs *dynconfig.Configs
	Logs    *storage.Manager
	Logger  *slog.Logger // discards
}

// NewBrokerBase opens a BrokerBase for broker 1.
func NewBrokerBase(t testing.TB) *BrokerBase {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.NewBroker(config.Properties{"log.dirs": dir, "node.id": "1"})
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	store := BoltStore(t)
	logs, err := storage.OpenManager([]string{dir}, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	return &BrokerBase{
		Config:  cfg,
		Store:   store,
		Configs: dynconfig.New(dynconfig.Options{Broker: cfg, Store: store, Logger: discard, Audit: discard}),
		Logs:    logs,
		Logger:  discard,
	}
}

// OneRecordBatch is a v2 record batch, as a non-idempotent producer sends
// it, of one record with value and the current time.
func OneRecordBatch(t testing.TB, value []byte) []byte {
	t.Helper()
	b := record.NewBuilder()
	b.Add(time.Now().UnixMilli(), nil, value)
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return batch
}
