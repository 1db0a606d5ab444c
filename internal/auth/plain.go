package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"unicode/utf8"
)

// plainSession is SASL/PLAIN (RFC 4616): one client token "[authzid] NUL authcid NUL passwd", an empty
// reply. Checks and messages follow Kafka's PlainSaslServer: a malformed token or an empty user or password
// fails with the generic message; a wrong password or unknown user with "Invalid username or password"; an
// authzid other than the user (checked only after the password, so it reveals nothing) with its own message.
type plainSession struct {
	users PlainUsers
	state sessionState
	user  string
}

type sessionState uint8

const (
	stateStart sessionState = iota
	stateFinal              // SCRAM: waiting for client-final
	stateDone
	stateFailed
)

func (s *plainSession) AuthorizationID() string {
	if s.state != stateDone {
		return ""
	}
	return s.user
}

func (s *plainSession) Step(token []byte) ([]byte, bool, error) {
	if s.state != stateStart {
		return nil, false, fmt.Errorf("%w: SASL/PLAIN takes a single token", ErrIllegalSaslState)
	}
	s.state = stateFailed
	authzid, user, password, err := parsePlainToken(token)
	if err != nil {
		return nil, false, genericFailure(MechanismPlain, err.Error())
	}
	if user == "" {
		return nil, false, genericFailure(MechanismPlain, "Authentication failed: username not specified")
	}
	if password == "" {
		return nil, false, genericFailure(MechanismPlain, "Authentication failed: password not specified")
	}
	expected, known := s.users(user)
	match := passwordsEqual(password, expected) // compared even for unknown users: same time either way
	if !known || !match {
		return nil, false, &AuthError{Mechanism: MechanismPlain, specific: msgInvalidUserOrPassword, reason: failedUserReason("SASL/PLAIN", user, known)}
	}
	if authzid != "" && authzid != user {
		return nil, false, specificFailure(MechanismPlain, msgAuthzIDMismatch)
	}
	s.user = user
	s.state = stateDone
	return []byte{}, true, nil
}

// parsePlainToken splits the RFC 4616 message. Unlike Kafka, which silently ignores anything after a third
// NUL, more or fewer than two NULs is malformed; every field must be valid UTF-8.
func parsePlainToken(token []byte) (authzid, user, password string, err error) {
	if bytes.Count(token, []byte{0}) != 2 {
		return "", "", "", fmt.Errorf("Invalid SASL/PLAIN response: expected 3 tokens separated by NUL")
	}
	if !utf8.Valid(token) {
		return "", "", "", fmt.Errorf("Invalid SASL/PLAIN response: not UTF-8")
	}
	parts := bytes.SplitN(token, []byte{0}, 3)
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

// passwordsEqual compares in time independent of where the inputs differ and of their lengths (hashing
// first hides the expected password's length, which subtle.ConstantTimeCompare alone would not).
func passwordsEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
