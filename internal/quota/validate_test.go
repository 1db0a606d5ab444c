package quota

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		path, key string
		value     float64
		wantErr   string // substrings, "" = valid
	}{
		{"users/alice", ProducerByteRate, 1024, ""},
		{"users/alice/clients/c1", ConsumerByteRate, 1, ""},
		{"users/<default>/clients/<default>", RequestPercentage, 12.5, ""},
		{"clients/<default>", ControllerMutationRate, 0.5, ""},
		{"ips/10.0.0.1", ConnectionCreationRate, 10, ""},
		{"ips/<default>", ConnectionCreationRate, math.MaxInt32, ""},
		{"users/alice", ProducerByteRate, 1.5, "producer_byte_rate: value 1.5 must be a whole number (LONG)"},
		{"users/alice", ProducerByteRate, 0, "value 0 must be greater than 0"},
		{"users/alice", ConsumerByteRate, -5, "consumer_byte_rate: value -5 must be greater than 0"},
		{"users/alice", RequestPercentage, math.NaN(), "value NaN must be a finite number"},
		{"users/alice", ControllerMutationRate, math.Inf(1), "value +Inf must be a finite number"},
		{"users/alice", ProducerByteRate, 1e19, "out of range for LONG"},
		{"ips/10.0.0.1", ConnectionCreationRate, 2.5, "whole number (INT)"},
		{"ips/10.0.0.1", ConnectionCreationRate, 1e10, "out of range for INT"},
		{"ips/10.0.0.1", ProducerByteRate, 10, "applies to user and client-id entities, not ip entities"},
		{"users/alice", ConnectionCreationRate, 10, "applies to ip entities only"},
		{"users/alice", "producer_byte_rates", 10, `unknown quota key`},
		{"ips/<default>", "foo", 10, "valid: connection_creation_rate"},
		{"users/a/b", ProducerByteRate, 10, "entity path"},
		{"ips/example.com", ConnectionCreationRate, 10, "not an IP address"},
	} {
		err := ValidateKey(tc.path, tc.key, tc.value)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateKey(%s, %s, %v) = %v", tc.path, tc.key, tc.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateKey(%s, %s, %v) = %v, want %q", tc.path, tc.key, tc.value, err, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.path) {
			t.Errorf("error %q does not name the entity", err)
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Path != tc.path {
			t.Errorf("error %v is not a *ValidationError for %s", err, tc.path)
		}
	}
}

func TestValidateOverridesReserved(t *testing.T) {
	over := user2SubquotaOverrides()
	over["users/user2/clients/clientB"] = map[string]float64{ProducerByteRate: 4990, ConsumerByteRate: 40}

	reserved := New(Options{Mode: Reserved, ExpireEvery: -1})
	err := reserved.ValidateOverrides(over)
	want := `users/user2 producer_byte_rate: reserved sub-quotas of user "user2" sum to 5000 (clientA=10, clientB=4990), above the user's quota 4096 (users/user2)`
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Fatalf("ValidateOverrides = %v\nwant %s", err, want)
	}
	// Kafka's mode has no such constraint.
	if err := New(Options{ExpireEvery: -1}).ValidateOverrides(over); err != nil {
		t.Errorf("independent mode: %v", err)
	}
	// The sample's numbers are valid; an exact fit too.
	if err := reserved.ValidateOverrides(user2SubquotaOverrides()); err != nil {
		t.Errorf("sample overrides: %v", err)
	}
	over["users/user2/clients/clientB"][ProducerByteRate] = 4086
	if err := reserved.ValidateOverrides(over); err != nil {
		t.Errorf("sum == total: %v", err)
	}

	// The total may come from the default user or the static default.
	over = Overrides{"users/<default>": {ProducerByteRate: 100}, "users/u/clients/c": {ProducerByteRate: 150}}
	if err := reserved.ValidateOverrides(over); err == nil || !strings.Contains(err.Error(), "above the user's quota 100 (users/<default>)") {
		t.Errorf("default-user total: %v", err)
	}
	static := New(Options{Mode: Reserved, ExpireEvery: -1, UserConsumerDefault: 64})
	if err := static.ValidateOverrides(Overrides{"users/u/clients/c": {ConsumerByteRate: 65}}); err == nil ||
		!strings.Contains(err.Error(), "(quota.user.consumer.default)") {
		t.Errorf("static total: %v", err)
	}
	// No total: sub-quotas are plain quotas.
	if err := reserved.ValidateOverrides(Overrides{"users/u/clients/c": {ProducerByteRate: 1e12}}); err != nil {
		t.Errorf("no total: %v", err)
	}

	// All faults are reported, in a stable order.
	err = reserved.ValidateOverrides(Overrides{"users/b": {"x": 1}, "users/a": {ProducerByteRate: -1}, "bad/path": {ProducerByteRate: 1}})
	if err == nil || strings.Count(err.Error(), "\n") != 2 || !strings.HasPrefix(err.Error(), "bad/path") {
		t.Errorf("multiple errors: %v", err)
	}
}

// TestReservationsAboveTotalNeverZero: if a total is lowered below the
// reservations anyway (SetOverrides does not validate), enforcement stays
// finite.
func TestReservationsAboveTotalNeverZero(t *testing.T) {
	m := New(Options{Mode: Reserved, ExpireEvery: -1})
	m.SetOverrides(Overrides{"users/u": {ProducerByteRate: 1000}, "users/u/clients/a": {ProducerByteRate: 5000}})
	if limit, _, _ := m.Resolve("u", "b", ProducerByteRate); limit != 1 {
		t.Errorf("remainder = %v, want 0.1%% of 1000", limit)
	}
	if th := m.RecordProduce("u", "b", 10); th <= 0 || th > 10*time.Second {
		t.Errorf("throttle %v", th)
	}
}

// TestValidateChanges checks an alteration against the installed set, as
// AlterClientQuotas needs, without revalidating every other entity.
func TestValidateChanges(t *testing.T) {
	m := New(Options{Mode: Reserved, ExpireEvery: -1})
	m.SetOverrides(user2SubquotaOverrides())
	for _, tc := range []struct {
		name    string
		changes Overrides
		wantErr string
	}{
		{"fits", Overrides{"users/user2/clients/clientC": {ProducerByteRate: 56}}, ""},
		{"sub-quota above the rest", Overrides{"users/user2/clients/clientC": {ProducerByteRate: 4057}},
			`reserved sub-quotas of user "user2" sum to 4097 (clientA=10, clientB=30, clientC=4057), above the user's quota 4096 (users/user2)`},
		{"lowering the total below the reservations", Overrides{"users/user2": {ProducerByteRate: 39, ConsumerByteRate: 8192}},
			"sum to 40 (clientA=10, clientB=30), above the user's quota 39"},
		{"removing the total frees the sub-quotas", Overrides{"users/user2": nil, "users/user2/clients/clientC": {ProducerByteRate: 1e9}}, ""},
		{"a default total applies to every user", Overrides{"users/user2": nil, "users/<default>": {ProducerByteRate: 20}},
			`user "user2" sum to 40`},
		{"bad value", Overrides{"users/x": {ProducerByteRate: -1}}, "must be greater than 0"},
		{"bad path removal", Overrides{"users/a/b": nil}, "entity path"},
		{"unrelated entity", Overrides{"clients/zzz": {ConsumerByteRate: 5}}, ""},
	} {
		err := m.ValidateChanges(tc.changes)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	// Validation never installs anything.
	if limit, _, _ := m.Resolve("user2", "clientC", ProducerByteRate); limit != 4056 {
		t.Errorf("ValidateChanges changed the installed set: %v", limit)
	}
}
