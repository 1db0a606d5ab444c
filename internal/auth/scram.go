package auth

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// scramSession is SASL/SCRAM-SHA-256/512 (RFC 5802, RFC 7677): client-first → server-first, client-final →
// server-final. github.com/xdg-go/scram runs the RFC exchange; in front of it this session applies Kafka's
// ScramSaslServer rules:
//
//   - the client-first message must match Kafka's grammar: gs2 flag "n" only (no channel binding), an
//     optional authzid, ASCII SASL names, printable nonce, extensions as ALPHA=VALUE;
//   - the "tokenauth" extension (delegation-token login) is refused: kbroker has no delegation tokens;
//   - an unknown user fails like every other credential problem (generic message, nothing revealed);
//   - an authzid other than the user name fails with Kafka's specific message;
//   - a stored credential below the mechanism's minimum iterations is refused.
type scramSession struct {
	mechanism string
	lookup    CredentialLookup
	state     sessionState
	conv      *scram.ServerConversation
	user      string
	// What client-final is checked against (see clientFinal).
	clientFirstBare, serverFirst, gs2Header string
	cred                                    Credential
}

func newScramSession(mechanism string, lookup CredentialLookup) *scramSession {
	return &scramSession{mechanism: mechanism, lookup: lookup}
}

func (s *scramSession) AuthorizationID() string {
	if s.state != stateDone {
		return ""
	}
	return s.user
}

func (s *scramSession) Step(token []byte) (reply []byte, done bool, err error) {
	// The SCRAM library is third-party code parsing hostile input; a panic there must fail this exchange,
	// not the broker.
	defer func() {
		if r := recover(); r != nil {
			s.state = stateFailed
			reply, done, err = nil, false, genericFailure(s.mechanism, fmt.Sprintf("SCRAM: internal error: %v", r))
		}
	}()
	switch s.state {
	case stateStart:
		return s.clientFirst(string(token))
	case stateFinal:
		return s.clientFinal(string(token))
	}
	return nil, false, fmt.Errorf("%w in SASL/%s server state %s", ErrIllegalSaslState, s.mechanism, s.stateName())
}

func (s *scramSession) stateName() string {
	if s.state == stateDone {
		return "COMPLETE"
	}
	return "FAILED"
}

func (s *scramSession) fail(reason string) ([]byte, bool, error) {
	s.state = stateFailed
	s.conv = nil
	return nil, false, genericFailure(s.mechanism, reason)
}

func (s *scramSession) clientFirst(msg string) ([]byte, bool, error) {
	first, err := parseScramClientFirst(msg)
	if err != nil {
		return s.fail("Invalid SCRAM client first message format: " + err.Error())
	}
	if first.tokenAuth {
		return s.fail("Token Authentication failed: delegation tokens are not supported")
	}
	cred, ok := s.lookup(first.user, s.mechanism)
	if !ok {
		return s.fail("Authentication failed: Invalid user credentials (" + failedUserReason("SASL/"+s.mechanism, first.user, false) + ")")
	}
	if first.authzid != "" && first.authzid != first.user {
		s.state, s.conv = stateFailed, nil
		return nil, false, specificFailure(s.mechanism, msgAuthzIDMismatch)
	}
	if cred.Iterations < MinIterations {
		return s.fail(fmt.Sprintf("Iterations %d is less than the minimum %d for %s", cred.Iterations, MinIterations, s.mechanism))
	}
	h, _ := scramHash(s.mechanism)
	if size := h().Size(); len(cred.Salt) == 0 || len(cred.StoredKey) != size || len(cred.ServerKey) != size {
		return s.fail("Authentication failed: Credentials could not be obtained (malformed stored credential)")
	}
	stored := scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
		StoredKey:  cred.StoredKey,
		ServerKey:  cred.ServerKey,
	}
	server, err := scramHashGen(s.mechanism).NewServer(func(string) (scram.StoredCredentials, error) { return stored, nil })
	if err != nil {
		return s.fail("SCRAM: " + err.Error())
	}
	s.conv = server.NewConversation()
	reply, err := s.conv.Step(msg)
	if err != nil {
		return s.fail("SCRAM client-first: " + err.Error())
	}
	s.user = first.user
	s.state = stateFinal
	s.gs2Header = msg[:len(msg)-len(first.bare)]
	s.clientFirstBare, s.serverFirst, s.cred = first.bare, reply, cred
	return []byte(reply), false, nil
}

// clientFinal verifies client-final (RFC 5802 §3) as Kafka's ScramSaslServer
// does, rather than through the SCRAM library: Kafka accepts a nonce that
// only ends with the server's nonce, and librdkafka (kcat, confluent-kafka-*)
// relies on it by sending the client nonce twice; the proof is checked over
// the message as sent.
func (s *scramSession) clientFinal(msg string) ([]byte, bool, error) {
	s.conv = nil
	withoutProof, proofB64, ok := strings.Cut(msg, ",p=")
	if !ok || strings.Contains(proofB64, ",") {
		return s.fail("SCRAM client-final: missing or misplaced proof")
	}
	fields := strings.Split(withoutProof, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "c=") || !strings.HasPrefix(fields[1], "r=") {
		return s.fail("SCRAM client-final: bad format")
	}
	if cb, err := base64.StdEncoding.DecodeString(fields[0][2:]); err != nil || string(cb) != s.gs2Header {
		return s.fail("SCRAM client-final: channel binding does not match the client-first header")
	}
	serverNonce := ""
	for _, f := range strings.Split(s.serverFirst, ",") {
		if v, ok := strings.CutPrefix(f, "r="); ok {
			serverNonce = v
		}
	}
	if serverNonce == "" || !strings.HasSuffix(fields[1][2:], serverNonce) {
		return s.fail("SCRAM client-final: Invalid client nonce in the final client message")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h, _ := scramHash(s.mechanism)
	if err != nil || len(proof) != h().Size() {
		return s.fail("SCRAM client-final: bad proof encoding")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSignature := hmacSum(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	stored := h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), s.cred.StoredKey) != 1 {
		return s.fail("SCRAM client-final: Invalid client credentials")
	}
	reply := "v=" + base64.StdEncoding.EncodeToString(hmacSum(h, s.cred.ServerKey, authMessage))
	s.state, s.cred = stateDone, Credential{}
	return []byte(reply), true, nil
}

func scramHashGen(mechanism string) scram.HashGeneratorFcn {
	if mechanism == MechanismScramSHA512 {
		return scram.SHA512
	}
	return scram.SHA256
}

type scramClientFirst struct {
	authzid, user string
	tokenAuth     bool
	bare          string // client-first-message-bare: the message after the GS2 header
}

// parseScramClientFirst checks Kafka's ClientFirstMessage grammar
//
//	"n," ["a=" saslname] "," "n=" saslname ",r=" printable ("," alpha "=" value)*
//
// (Kafka also tolerates a reserved "m=" field; RFC 5802 §5.1 says its presence must fail, and the SCRAM
// library fails it.) SASL names are ASCII without ',' and '=', which travel as "=2C" and "=3D".
func parseScramClientFirst(msg string) (scramClientFirst, error) {
	var out scramClientFirst
	fields := strings.Split(msg, ",")
	if len(fields) < 4 {
		return out, errors.New("too few fields")
	}
	if fields[0] != "n" {
		return out, errors.New("only gs2 flag \"n\" is supported (no channel binding)")
	}
	if fields[1] != "" {
		raw, ok := strings.CutPrefix(fields[1], "a=")
		if !ok {
			return out, errors.New("bad authzid field")
		}
		if out.authzid, ok = decodeSaslName(raw); !ok {
			return out, errors.New("bad authzid")
		}
	}
	out.bare = strings.Join(fields[2:], ",")
	if strings.HasPrefix(fields[2], "m=") {
		return out, errors.New("mandatory extensions are not supported")
	}
	raw, ok := strings.CutPrefix(fields[2], "n=")
	if !ok {
		return out, errors.New("bad username field")
	}
	if out.user, ok = decodeSaslName(raw); !ok {
		return out, errors.New("bad username")
	}
	nonce, ok := strings.CutPrefix(fields[3], "r=")
	if !ok || nonce == "" || !allBytes(nonce, func(c byte) bool { return c >= 0x21 && c <= 0x7e }) {
		return out, errors.New("bad nonce")
	}
	for _, ext := range fields[4:] {
		key, value, ok := strings.Cut(ext, "=")
		if !ok || key == "" || value == "" || !allBytes(key, isAlpha) || !allBytes(value, func(c byte) bool { return c >= 0x01 && c <= 0x7f }) {
			return out, errors.New("bad extension")
		}
		// Kafka's ScramExtensions.tokenAuthenticated: Boolean.parseBoolean(tokenauth).
		if key == "tokenauth" && strings.EqualFold(value, "true") {
			out.tokenAuth = true
		}
	}
	return out, nil
}

// decodeSaslName decodes RFC 5802's saslname: one or more ASCII characters other than NUL, ',' and '=',
// with "=2C" for ',' and "=3D" for '='.
func decodeSaslName(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", false
			}
			i += 2
		case c >= 0x01 && c <= 0x7f:
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
