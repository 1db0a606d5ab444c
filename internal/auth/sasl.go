package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A Session is one authentication exchange on one connection (Kafka's SaslServer). It is not safe for
// concurrent use; a connection drives it from one goroutine.
type Session interface {
	// Step consumes the client's next token and returns the server's reply. done=true once authenticated;
	// then AuthorizationID() is the user name. An error means authentication failed: its message is what the
	// client is told (never the password or secrets); the connection answers SASL_AUTHENTICATION_FAILED and
	// closes. Errors are *AuthError, or wrap ErrIllegalSaslState when Step is called after the exchange ended.
	Step(token []byte) (reply []byte, done bool, err error)
	// AuthorizationID is the authenticated user name, "" until Step reported done.
	AuthorizationID() string
}

// PlainUsers looks up a PLAIN user's password, as the user_<name>="<password>" options of the
// PlainLoginModule JAAS line (see PlainUsersFromJAAS).
type PlainUsers func(user string) (password string, ok bool)

// CredentialLookup finds the stored SCRAM credential of user for mechanism (MechanismScramSHA256/512).
type CredentialLookup func(user, mechanism string) (Credential, bool)

var (
	// ErrUnsupportedMechanism: SaslHandshake asked for a mechanism that is not enabled. The connection
	// answers UNSUPPORTED_SASL_MECHANISM (33) with Enabled() and closes.
	ErrUnsupportedMechanism = errors.New("Unsupported SASL mechanism")
	// ErrIllegalSaslState: a token arrived after the exchange completed or failed (ILLEGAL_SASL_STATE, 34).
	ErrIllegalSaslState = errors.New("Unexpected SASL token")
)

// AuthError is a failed authentication. Kafka sends the client either a specific message (its
// SaslAuthenticationException texts, e.g. "Authentication failed: Invalid username or password") or, for
// every other failure, a generic one that reveals nothing (not even whether the user exists):
// "Authentication failed during authentication due to invalid credentials with SASL mechanism <M>".
type AuthError struct {
	Mechanism string
	specific  string // the message Kafka lets through; "" means the generic one
	reason    string // why it failed, for the broker's debug log; never secrets
}

// Error is the message for the client on a first authentication.
func (e *AuthError) Error() string { return e.ClientMessage(false) }

// ClientMessage is the SaslAuthenticate ErrorMessage; reauthenticating selects Kafka's "re-authentication"
// wording for KIP-368 re-authentication.
func (e *AuthError) ClientMessage(reauthenticating bool) string {
	if e.specific != "" {
		return e.specific
	}
	phase := "authentication"
	if reauthenticating {
		phase = "re-authentication"
	}
	return "Authentication failed during " + phase + " due to invalid credentials with SASL mechanism " + e.Mechanism
}

// Reason says why authentication failed, for the broker's own log (Kafka logs it at debug). It may name the
// user; it never contains a password, proof or key.
func (e *AuthError) Reason() string {
	if e.reason != "" {
		return e.reason
	}
	return e.ClientMessage(false)
}

func genericFailure(mechanism, reason string) *AuthError {
	return &AuthError{Mechanism: mechanism, reason: reason}
}

func specificFailure(mechanism, msg string) *AuthError {
	return &AuthError{Mechanism: mechanism, specific: msg, reason: msg}
}

// Kafka's specific client messages (SaslAuthenticationException) shared by PLAIN and SCRAM.
const (
	msgInvalidUserOrPassword = "Authentication failed: Invalid username or password"
	msgAuthzIDMismatch       = "Authentication failed: Client requested an authorization id that is different from username"
)

// Mechanisms builds sessions for the enabled mechanisms. It is immutable and safe for concurrent use.
type Mechanisms struct {
	enabled []string
	plain   PlainUsers
	scram   CredentialLookup
}

// NewMechanisms checks sasl.enabled.mechanisms against what kbroker implements (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512; names are case-sensitive as in Kafka) and that each enabled mechanism has its source of
// users: plainUsers for PLAIN, scram for SCRAM. Duplicates are dropped, order is kept (it is the order
// SaslHandshake reports).
func NewMechanisms(enabled []string, plainUsers PlainUsers, scram CredentialLookup) (*Mechanisms, error) {
	m := &Mechanisms{plain: plainUsers, scram: scram}
	for _, raw := range enabled {
		name := strings.TrimSpace(raw)
		if name == "" || slices.Contains(m.enabled, name) {
			continue
		}
		switch name {
		case MechanismPlain:
			if plainUsers == nil {
				return nil, errors.New("sasl.enabled.mechanisms: PLAIN needs users: a PlainLoginModule sasl.jaas.config with user_<name>=\"<password>\" options")
			}
		case MechanismScramSHA256, MechanismScramSHA512:
			if scram == nil {
				return nil, fmt.Errorf("sasl.enabled.mechanisms: %s needs a SCRAM credential store", name)
			}
		default:
			return nil, fmt.Errorf("sasl.enabled.mechanisms: unsupported SASL mechanism %q (kbroker supports %s, %s, %s)",
				name, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
		}
		m.enabled = append(m.enabled, name)
	}
	return m, nil
}

// Enabled lists the enabled mechanisms, for SaslHandshake's response.
func (m *Mechanisms) Enabled() []string { return slices.Clone(m.enabled) }

// IsEnabled reports whether mechanism may be used.
func (m *Mechanisms) IsEnabled(mechanism string) bool { return slices.Contains(m.enabled, mechanism) }

// Start begins an exchange for the mechanism the client chose in SaslHandshake. A mechanism that is not
// enabled gives an error wrapping ErrUnsupportedMechanism that lists the enabled ones.
func (m *Mechanisms) Start(mechanism string) (Session, error) {
	if !m.IsEnabled(mechanism) {
		return nil, fmt.Errorf("%w %s; enabled mechanisms: %s", ErrUnsupportedMechanism, mechanism, strings.Join(m.enabled, ", "))
	}
	switch mechanism {
	case MechanismPlain:
		return &plainSession{users: m.plain}, nil
	default:
		return newScramSession(mechanism, m.scram), nil
	}
}

// ReauthMechanismMessage is Kafka's message when a KIP-368 re-authentication asks for a different mechanism
// than the connection authenticated with (the connection answers UNSUPPORTED_SASL_MECHANISM and closes).
func ReauthMechanismMessage(requested, previous string) string {
	return fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
		requested, previous)
}

// PrincipalChangedMessage is Kafka's message when re-authentication yields another principal (both as
// "Type:Name"); the connection answers SASL_AUTHENTICATION_FAILED and closes.
func PrincipalChangedMessage(previous, next string) string {
	pt, pn, _ := strings.Cut(previous, ":")
	nt, nn, _ := strings.Cut(next, ":")
	return fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s", pt, pn, nt, nn)
}

// failedUserReason is the log reason of a login that named user: the name
// when it is a known user, so that operators see whose password is failing,
// but never a name the broker does not know. People type their password
// into the user name field, and an unknown "name" is too often one; the
// client gets the same generic answer either way.
func failedUserReason(mechanism, user string, known bool) string {
	if known {
		return fmt.Sprintf("%s: invalid password for user %q", mechanism, user)
	}
	return mechanism + ": no credential for the user named (the name is not logged: it may be a mistyped password)"
}
