package broker

import (
	"testing"

	"kbroker/internal/config"
)

// TestEveryDynamicKeyHasAnApplier: a running broker has an applier
// registered for every key it lets change at runtime, so no dynamic key is
// accepted and then ignored.
func TestEveryDynamicKeyHasAnApplier(t *testing.T) {
	b, err := New(config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, key := range b.configs.Unapplied() {
		t.Errorf("dynamic key %s has no applier registered", key)
	}
}
