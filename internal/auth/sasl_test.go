package auth

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func staticUsers(m map[string]string) PlainUsers {
	return func(u string) (string, bool) { p, ok := m[u]; return p, ok }
}

func TestNewMechanismsValidatesConfiguration(t *testing.T) {
	users := staticUsers(map[string]string{"alice": "pw"})
	lookup := func(string, string) (Credential, bool) { return Credential{}, false }

	m, err := NewMechanisms([]string{"SCRAM-SHA-512", " PLAIN", "SCRAM-SHA-512", ""}, users, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Enabled(); !slices.Equal(got, []string{"SCRAM-SHA-512", "PLAIN"}) {
		t.Fatalf("Enabled() = %v", got)
	}
	m.Enabled()[0] = "mutated"
	if m.Enabled()[0] != "SCRAM-SHA-512" {
		t.Fatal("Enabled() exposes internal slice")
	}

	for _, tc := range []struct {
		enabled []string
		users   PlainUsers
		lookup  CredentialLookup
		want    string
	}{
		{[]string{"GSSAPI"}, users, lookup, "unsupported SASL mechanism \"GSSAPI\""},
		{[]string{"plain"}, users, lookup, "unsupported SASL mechanism \"plain\""}, // case-sensitive, as Kafka
		{[]string{"PLAIN"}, nil, lookup, "PLAIN needs users"},
		{[]string{"SCRAM-SHA-256"}, users, nil, "SCRAM-SHA-256 needs a SCRAM credential store"},
	} {
		if _, err := NewMechanisms(tc.enabled, tc.users, tc.lookup); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewMechanisms(%v) error = %v, want %q", tc.enabled, err, tc.want)
		}
	}
}

func TestStartUnsupportedMechanismListsEnabled(t *testing.T) {
	m, err := NewMechanisms([]string{"PLAIN", "SCRAM-SHA-256"}, staticUsers(nil),
		func(string, string) (Credential, bool) { return Credential{}, false })
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Start("SCRAM-SHA-512")
	if !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("err = %v, want ErrUnsupportedMechanism", err)
	}
	if !strings.Contains(err.Error(), "SCRAM-SHA-512") || !strings.Contains(err.Error(), "PLAIN, SCRAM-SHA-256") {
		t.Fatalf("message %q should name the request and the enabled mechanisms", err)
	}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256"} {
		if s, err := m.Start(mech); err != nil || s == nil {
			t.Fatalf("Start(%s) = %v, %v", mech, s, err)
		}
	}
}

func TestAuthErrorMessages(t *testing.T) {
	e := genericFailure("SCRAM-SHA-256", "user x unknown")
	if got := e.Error(); got != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
		t.Errorf("Error() = %q", got)
	}
	if got := e.ClientMessage(true); got != "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
		t.Errorf("ClientMessage(true) = %q", got)
	}
	if e.Reason() != "user x unknown" {
		t.Errorf("Reason() = %q", e.Reason())
	}
	s := specificFailure("PLAIN", msgInvalidUserOrPassword)
	if s.ClientMessage(true) != msgInvalidUserOrPassword || s.Error() != msgInvalidUserOrPassword {
		t.Errorf("specific message changed: %q", s.ClientMessage(true))
	}
}

func TestReauthenticationMessages(t *testing.T) {
	if got := ReauthMechanismMessage("PLAIN", "SCRAM-SHA-256"); got !=
		"SASL mechanism 'PLAIN' requested by client is not supported for re-authentication of mechanism 'SCRAM-SHA-256'" {
		t.Errorf("ReauthMechanismMessage = %q", got)
	}
	if got := PrincipalChangedMessage("User:alice", "User:bob"); got != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Errorf("PrincipalChangedMessage = %q", got)
	}
}
