package dynconfig_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/dynconfig/dynconfigtest"
	"kbroker/internal/meta"
	"kbroker/policy"
)

func newConfigs(t *testing.T, alter policy.AlterConfig) (*dynconfig.Configs, *meta.Store) {
	b := dynconfigtest.Open(t, alter)
	return b.Configs, b.Store
}

func set(key, value string) dynconfig.Op {
	return dynconfig.Op{Name: key, Kind: kmsg.IncrementalAlterConfigOpSet, Value: &value}
}

func broker(name string, ops ...dynconfig.Op) dynconfig.Alteration {
	return dynconfig.Alteration{Resource: policy.ConfigResource{Type: policy.Broker, Name: name}, Ops: ops}
}

// TestPolicyRunsOutsideTheWriteTransaction: a policy that itself writes to
// the store (here: the same resource, as another admin would at that
// moment) neither deadlocks on bbolt's write lock nor is lost: the commit
// sees the version changed and the change starts over from a fresh read,
// policy included.
func TestPolicyRunsOutsideTheWriteTransaction(t *testing.T) {
	var calls atomic.Int32
	var store *meta.Store
	alter := policy.AlterConfigFunc(func(r policy.AlterConfigRequest) error {
		if calls.Add(1) == 1 {
			return store.UpdateConfigs(context.Background(), meta.BrokerConfigs, "", func(m map[string]string) (map[string]string, error) {
				m["log.roll.ms"] = "5000"
				return m, nil
			})
		}
		return nil
	})
	c, s := newConfigs(t, alter)
	store = s
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Alter(ctx, broker("", set("log.retention.ms", "60000"))); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("policy ran %d times, want twice (once more after the conflicting write)", n)
	}
	want := map[string]string{"log.roll.ms": "5000", "log.retention.ms": "60000"}
	if got := s.Snapshot().BrokerConfig(""); !maps.Equal(got, want) {
		t.Errorf("stored %v, want both writers' keys %v", got, want)
	}
}

// TestApplierCheckRefusesBeforeAnythingIsStored: an applier that cannot
// apply a change of this broker's configs refuses it with INVALID_CONFIG;
// nothing is stored and no applier is woken.
func TestApplierCheckRefusesBeforeAnythingIsStored(t *testing.T) {
	c, s := newConfigs(t, nil)
	var applied atomic.Int32
	c.Register(config.ApplyListenerSecurity, dynconfig.Applier{
		Apply: func(dynconfig.Change) { applied.Add(1) },
		Check: func(p dynconfig.Proposal) error {
			if p.Next["ssl.keystore.location"] == "/missing.pem" {
				return errors.New("cannot read /missing.pem")
			}
			return nil
		},
	})
	err := c.Alter(context.Background(), broker("1", set("ssl.keystore.location", "/missing.pem")))
	if !errors.Is(err, dynconfig.ErrInvalidConfig) || err.Error() != "cannot read /missing.pem" {
		t.Fatalf("alter: %v, want INVALID_CONFIG with the applier's reason", err)
	}
	if got := s.Snapshot().BrokerConfig("1"); len(got) != 0 || applied.Load() != 0 {
		t.Fatalf("refused change stored %v and woke the applier %d times", got, applied.Load())
	}
	// Another broker's files are that broker's to check.
	if err := c.Alter(context.Background(), broker("2", set("ssl.keystore.location", "/missing.pem"))); err != nil {
		t.Fatalf("alter of broker 2: %v", err)
	}
}

// TestKeySetAgainRereadsOnlyWhereAsked: a key store location set to the
// value it has changes nothing in the store, yet its applier (which reads
// the file) applies it again; a log default set again wakes no one.
func TestKeySetAgainRereadsOnlyWhereAsked(t *testing.T) {
	c, _ := newConfigs(t, nil)
	var security, logs []dynconfig.Change
	c.Register(config.ApplyListenerSecurity, dynconfig.Applier{RereadOnSet: true, Apply: func(ch dynconfig.Change) { security = append(security, ch) }})
	c.Register(config.ApplyLogs, dynconfig.Applier{Apply: func(ch dynconfig.Change) { logs = append(logs, ch) }})
	ctx := context.Background()
	for range 2 {
		if err := c.Alter(ctx, broker("1", set("ssl.keystore.location", "/k.pem"), set("log.retention.ms", "1"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(security) != 2 || !slices.Equal(security[1].Keys, []string{"ssl.keystore.location"}) {
		t.Errorf("listener security woken with %+v, want twice, the second for the key set again", security)
	}
	if len(logs) != 1 || !slices.Equal(logs[0].Keys, []string{"log.retention.ms"}) {
		t.Errorf("logs woken with %+v, want once, for the first (real) change", logs)
	}
}

func TestUnappliedListsDynamicKeysWithoutAnApplier(t *testing.T) {
	c, _ := newConfigs(t, nil)
	if len(c.Unapplied()) == 0 {
		t.Fatal("no applier registered, yet every dynamic key has one")
	}
	for _, a := range []config.Applier{config.ApplyLogs, config.ApplyListenerSecurity, config.ApplyConnectionLimits, config.ApplyPolicies, config.ApplyReplicationQuotas} {
		c.Register(a, dynconfig.Applier{Apply: func(dynconfig.Change) {}})
	}
	if u := c.Unapplied(); len(u) != 0 {
		t.Errorf("with every applier registered, still unapplied: %v", u)
	}
}

// TestGroupSettingsIsTheGroupsOverrideOverTheBrokers: ok only for a group
// that overrides a consumer timing, the other one then the broker's; read
// on every heartbeat, so it allocates nothing.
func TestGroupSettingsIsTheGroupsOverrideOverTheBrokers(t *testing.T) {
	c, _ := newConfigs(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	group := func(name string, ops ...dynconfig.Op) dynconfig.Alteration {
		return dynconfig.Alteration{Resource: policy.ConfigResource{Type: policy.Group, Name: name}, Ops: ops}
	}
	if err := c.Alter(ctx, group("g", set("consumer.session.timeout.ms", "55000"), set("share.auto.offset.reset", "earliest"))); err != nil {
		t.Fatal(err)
	}
	if err := c.Alter(ctx, group("share-only", set("share.auto.offset.reset", "earliest"))); err != nil {
		t.Fatal(err)
	}
	if s, h, ok := c.GroupSettings("g"); !ok || s != 55*time.Second || h != 5*time.Second {
		t.Fatalf("GroupSettings(g) = %v %v %v", s, h, ok)
	}
	for _, g := range []string{"share-only", "unknown"} {
		if _, _, ok := c.GroupSettings(g); ok {
			t.Errorf("GroupSettings(%s) ok without a consumer timing override", g)
		}
	}
	if n := testing.AllocsPerRun(100, func() { c.GroupSettings("g") }); n != 0 {
		t.Errorf("GroupSettings allocates %v times per call", n)
	}
}
