package testkit

import (
	"log/slog"
	"path/filepath"
	"testing"

	"kbroker/internal/meta"
)

// BoltStore is a metadata store over a fresh bbolt file in the test's
// temporary directory, closed when the test ends: the single-broker store,
// for testing a service package without a broker around it.
func BoltStore(t testing.TB) *meta.Store {
	t.Helper()
	backend, err := meta.OpenBolt(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := meta.Open(backend, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
