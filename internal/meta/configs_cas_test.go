package meta

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"testing"
)

// TestConfigsCompareAndSet: a change computed from overrides that another
// writer changed meanwhile is refused and changes nothing, on both
// backends; computed again from a fresh read, it commits.
func TestConfigsCompareAndSet(t *testing.T) {
	for _, cb := range conformanceBackends(t) {
		t.Run(cb.name, func(t *testing.T) {
			ctx := context.Background()
			backend := cb.open(t)
			s, err := Open(backend, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })

			cur, v0, err := s.ReadConfigs(ctx, BrokerConfigs, "1")
			if err != nil || len(cur) != 0 {
				t.Fatalf("first read: %v %v", cur, err)
			}
			if err := s.CompareAndSetConfigs(ctx, BrokerConfigs, "1", v0, map[string]string{"a": "1"}); err != nil {
				t.Fatal(err)
			}
			cur, v1, err := s.ReadConfigs(ctx, BrokerConfigs, "1")
			if err != nil || !maps.Equal(cur, map[string]string{"a": "1"}) {
				t.Fatalf("read after set: %v %v", cur, err)
			}
			// Another writer (another broker, on etcd) changes the
			// overrides between the read and the commit.
			if _, err := backend.Update(ctx, putAll(brokerConfigKey("1"), `{"a":"2"}`)); err != nil {
				t.Fatal(err)
			}
			err = s.CompareAndSetConfigs(ctx, BrokerConfigs, "1", v1, map[string]string{"a": "1", "b": "1"})
			if !errors.Is(err, ErrConfigsChanged) {
				t.Fatalf("commit on a stale version: %v, want ErrConfigsChanged", err)
			}
			cur, v2, err := s.ReadConfigs(ctx, BrokerConfigs, "1")
			if err != nil || !maps.Equal(cur, map[string]string{"a": "2"}) {
				t.Fatalf("after the refused commit: %v %v, want the concurrent writer's a=2", cur, err)
			}
			if err := s.CompareAndSetConfigs(ctx, BrokerConfigs, "1", v2, nil); err != nil {
				t.Fatal(err)
			}
			if got := s.Snapshot().BrokerConfig("1"); len(got) != 0 {
				t.Fatalf("snapshot after deleting every override: %v", got)
			}
			if _, _, err := s.ReadConfigs(ctx, TopicConfigs, "missing"); !errors.Is(err, ErrUnknownTopic) {
				t.Fatalf("reading the overrides of a missing topic: %v", err)
			}
			if err := s.CompareAndSetConfigs(ctx, TopicConfigs, "missing", "", map[string]string{"a": "1"}); !errors.Is(err, ErrUnknownTopic) {
				t.Fatalf("overrides of a missing topic: %v", err)
			}
		})
	}
}
