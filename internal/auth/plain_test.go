package auth

import (
	"errors"
	"strings"
	"testing"
)

func plainSessionFor(t *testing.T) Session {
	t.Helper()
	m, err := NewMechanisms([]string{MechanismPlain}, staticUsers(map[string]string{"alice": "alice-secret", "bob": "b"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Start(MechanismPlain)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlain(t *testing.T) {
	const (
		generic     = "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"
		badPassword = "Authentication failed: Invalid username or password"
		authzid     = "Authentication failed: Client requested an authorization id that is different from username"
	)
	for _, tc := range []struct {
		name, token string
		wantUser    string // "" means failure
		wantErr     string
	}{
		{"good", "\x00alice\x00alice-secret", "alice", ""},
		{"authzid equal to user", "alice\x00alice\x00alice-secret", "alice", ""},
		{"wrong password", "\x00alice\x00nope", "", badPassword},
		{"password prefix", "\x00alice\x00alice-secre", "", badPassword},
		{"unknown user looks like wrong password", "\x00mallory\x00alice-secret", "", badPassword},
		{"authzid mismatch", "bob\x00alice\x00alice-secret", "", authzid},
		{"authzid mismatch with wrong password reveals nothing", "bob\x00alice\x00x", "", badPassword},
		{"empty user", "\x00\x00pw", "", generic},
		{"empty password", "\x00alice\x00", "", generic},
		{"one NUL", "alice\x00alice-secret", "", generic},
		{"three NULs", "\x00alice\x00alice-secret\x00", "", generic},
		{"empty token", "", "", generic},
		{"invalid UTF-8", "\x00al\xffice\x00pw", "", generic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plainSessionFor(t)
			reply, done, err := s.Step([]byte(tc.token))
			if tc.wantUser != "" {
				if err != nil || !done || len(reply) != 0 {
					t.Fatalf("Step = %q, %v, %v; want empty reply, done", reply, done, err)
				}
				if s.AuthorizationID() != tc.wantUser {
					t.Fatalf("AuthorizationID = %q", s.AuthorizationID())
				}
				return
			}
			if err == nil || done {
				t.Fatalf("Step succeeded: done=%v", done)
			}
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("err %T is not *AuthError", err)
			}
			if err.Error() != tc.wantErr {
				t.Fatalf("client message %q, want %q", err.Error(), tc.wantErr)
			}
			if strings.Contains(ae.Reason(), "alice-secret") || strings.Contains(err.Error(), "alice-secret") {
				t.Fatal("error leaks the password")
			}
			if s.AuthorizationID() != "" {
				t.Fatal("failed session has an authorization id")
			}
		})
	}
}

func TestPlainSecondTokenIsIllegalState(t *testing.T) {
	s := plainSessionFor(t)
	if s.AuthorizationID() != "" {
		t.Fatal("authorization id before authentication")
	}
	if _, done, err := s.Step([]byte("\x00alice\x00alice-secret")); err != nil || !done {
		t.Fatal(done, err)
	}
	if _, _, err := s.Step([]byte("\x00alice\x00alice-secret")); !errors.Is(err, ErrIllegalSaslState) {
		t.Fatalf("second Step err = %v, want ErrIllegalSaslState", err)
	}
}

// The log reason of a failed login names a known user, whose password is
// failing, but never a name the broker does not know: that is too often a
// password typed into the wrong field.
func TestFailedLoginReasonNamesOnlyKnownUsers(t *testing.T) {
	users := staticUsers(map[string]string{"alice": "alice-secret"})
	reason := func(token string) string {
		_, _, err := (&plainSession{users: users}).Step([]byte(token))
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("%q: error %v, want an AuthError", token, err)
		}
		return ae.Reason()
	}
	if r := reason("\x00alice\x00wrong"); !strings.Contains(r, `"alice"`) {
		t.Errorf("wrong password of a known user: reason %q does not name alice", r)
	}
	if r := reason("\x00alice-secret\x00x"); strings.Contains(r, "alice-secret") {
		t.Errorf("unknown user: reason %q echoes the name sent", r)
	}
}
