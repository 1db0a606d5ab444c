package replica

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/dynconfig/dynconfigtest"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
	"kbroker/policy"
)

// TestConfigChangesReachOnlyTheLogsTheyConcern: a listener key (a
// certificate rotation) reconfigures no log; a broker-level log default
// reconfigures every open log; a topic override only that topic's.
func TestConfigChangesReachOnlyTheLogsTheyConcern(t *testing.T) {
	ctx := context.Background()
	broker := dynconfigtest.Open(t, nil)
	b, store, dyn := broker.Config, broker.Store, broker.Configs
	discard := slog.New(slog.DiscardHandler)
	logs, err := storage.OpenManager([]string{broker.Dir}, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var securityWakes atomic.Int64
	dyn.Register(config.ApplyListenerSecurity, dynconfig.Applier{Apply: func(dynconfig.Change) { securityWakes.Add(1) }})
	p := New(b, store, dyn, logs, discard)

	for _, name := range []string{"a", "b", "c"} {
		topic, err := store.CreateTopic(ctx, meta.Topic{Name: name, Partitions: 2, ReplicationFactor: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int32(2) {
			if _, err := p.Log(store.Snapshot(), topic, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	set := func(typ policy.ResourceType, name, key, value string) {
		t.Helper()
		err := dyn.Alter(ctx, dynconfig.Alteration{Resource: policy.ConfigResource{Type: typ, Name: name},
			Ops: []dynconfig.Op{{Name: key, Kind: kmsg.IncrementalAlterConfigOpSet, Value: &value}}})
		if err != nil {
			t.Fatalf("setting %s=%s on %s: %v", key, value, name, err)
		}
	}
	reconfigured := func() int64 { return p.configs.reconfigured.Load() }

	set(policy.Broker, "1", "listener.name.plaintext.ssl.keystore.location", "/etc/kbroker/new.pem")
	if n := reconfigured(); n != 0 {
		t.Errorf("a listener key reconfigured %d logs, want none", n)
	}
	if securityWakes.Load() != 1 {
		t.Errorf("listener security woken %d times by a listener key, want once", securityWakes.Load())
	}
	set(policy.Broker, "", "log.retention.ms", "60000")
	if n := reconfigured(); n != 6 {
		t.Errorf("a broker-level log default reconfigured %d logs, want all 6 open ones", n)
	}
	set(policy.Topic, "b", "retention.ms", "1000")
	if n := reconfigured(); n != 8 {
		t.Errorf("after a topic override, %d logs reconfigured in all, want 6 + b's 2", n)
	}
	if securityWakes.Load() != 1 {
		t.Errorf("listener security woken %d times, want only by the listener key", securityWakes.Load())
	}
	if got := StorageConfig(dyn.Layers(store.Snapshot(), "b")).RetentionMs; got != 1000 {
		t.Errorf("b's retention.ms resolves to %d, want its override 1000", got)
	}
	if got := StorageConfig(dyn.Layers(store.Snapshot(), "a")).RetentionMs; got != 60000 {
		t.Errorf("a's retention.ms resolves to %d, want the cluster default 60000", got)
	}
}

func TestFlushSettingsResolveAsKafka(t *testing.T) {
	cases := []struct {
		name   string
		layers config.Layers
		want   [2]int64 // flush.messages, flush.ms
	}{
		{"defaults: never forced", config.Layers{}, [2]int64{9223372036854775807, 9223372036854775807}},
		{"broker interval", config.Layers{Static: config.Properties{"log.flush.interval.ms": "1000", "log.flush.interval.messages": "10"}}, [2]int64{10, 1000}},
		{"scheduler interval when the flush interval is unset", config.Layers{Static: config.Properties{"log.flush.scheduler.interval.ms": "2000"}}, [2]int64{9223372036854775807, 2000}},
		{"topic override", config.Layers{Topic: map[string]string{"flush.ms": "5", "flush.messages": "1"}, ClusterDefault: map[string]string{"log.flush.interval.ms": "1000"}}, [2]int64{1, 5}},
	}
	for _, c := range cases {
		if cfg := StorageConfig(c.layers); [2]int64{cfg.FlushMessages, cfg.FlushMs} != c.want {
			got := [2]int64{cfg.FlushMessages, cfg.FlushMs}
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := FlushCheckInterval(config.Properties{"log.flush.scheduler.interval.ms": "3000"}); got != 3000 {
		t.Errorf("flush check interval %d, want 3000", got)
	}
}
