package wire

// SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator runs it:
//
//   - Until the first authentication completes only ApiVersions,
//     SaslHandshake and SaslAuthenticate are served; anything else closes
//     the connection (Kafka's IllegalSaslStateException).
//   - SaslHandshake v1 (KIP-152): the tokens travel in SaslAuthenticate
//     requests. v0: the next frames are raw tokens with no Kafka header, and
//     the replies raw frames too; the connection reads them as such.
//   - A failed exchange answers SASL_AUTHENTICATION_FAILED (an unknown
//     mechanism UNSUPPORTED_SASL_MECHANISM with the enabled list) and closes.
//   - connections.max.reauth.ms (KIP-368): the session lifetime is told to
//     SaslAuthenticate v1+ clients, which re-authenticate on the same
//     connection with the same mechanism and must keep their principal; a
//     request that arrives after the session expired without a
//     re-authentication under way closes the connection (for v0 clients too,
//     as Kafka does).
//
// The per-connection state belongs to the connection's one goroutine, which
// reads, handles and answers its requests in turn.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/refusal"
)

// maxSASLToken bounds a raw (SaslHandshake v0) token frame, and every frame
// before authentication, as Kafka's sasl.server.max.receive.size default.
const maxSASLToken = 524288

// rawSASLKey marks a Request that is a raw SASL token, not a Kafka request.
const rawSASLKey = -1

// connSecurity is a connection's authentication state.
type connSecurity struct {
	mechanisms *auth.Mechanisms // nil: not a SASL listener
	host       string           // the client's IP, cached for authorization

	session     auth.Session // the exchange under way, nil when none
	mechanism   string       // chosen in the (last) handshake
	handshakeV  int16
	authVersion int16 // SaslAuthenticate version of the last success
	authed      bool  // authenticated at least once
	reauthing   bool
	expiresAt   time.Time // zero: the session never expires
	rawNext     bool      // the next frame is a raw token (SaslHandshake v0)
	closeAfter  bool      // send the response being written, then close
}

// The SASL failures of the state machine. Each is wrapped with the message
// for the client; the API layer's error table turns them into Kafka error
// codes, so this package only says what went wrong.
var (
	// ErrSASLState: a SASL request out of turn (no handshake before it, a
	// second handshake during an exchange, a token after the exchange ended,
	// re-authentication with a client too old for it, a listener without
	// SASL).
	ErrSASLState = errors.New("illegal SASL state")
	// ErrSASLMechanism: a mechanism that is not enabled, or a
	// re-authentication that changes mechanism.
	ErrSASLMechanism = errors.New("unsupported SASL mechanism")
	// ErrSASLAuthentication: the credentials were refused, or a
	// re-authentication changed the principal.
	ErrSASLAuthentication = errors.New("SASL authentication failed")
)

// Host is the client's IP address as text (cached: authorization asks for
// it on every request).
func (c *Conn) Host() string {
	if c.sec.host == "" {
		c.sec.host = c.RemoteIP()
	}
	return c.sec.host
}

// SASLEnabled reports whether the connection came in on a SASL listener.
func (c *Conn) SASLEnabled() bool { return c.sec.mechanisms != nil }

// CloseAfterResponse closes the connection once the response to the current
// request is written.
func (c *Conn) CloseAfterResponse() { c.sec.closeAfter = true }

// SASLHandshake starts an exchange (or a KIP-368 re-authentication) with
// mechanism and returns the enabled mechanisms for the response.
func (c *Conn) SASLHandshake(version int16, mechanism string) ([]string, error) {
	s := &c.sec
	if s.mechanisms == nil {
		return nil, refusal.New(ErrSASLState, "SaslHandshake on listener "+c.Listener+", which has no SASL")
	}
	enabled := s.mechanisms.Enabled()
	switch {
	case s.authed && (version < 1 || s.authVersion < 1):
		c.CloseAfterResponse()
		return enabled, refusal.New(ErrSASLState, "Re-authentication needs SaslHandshake v1 and SaslAuthenticate v1+")
	case s.authed && mechanism != s.mechanism:
		c.CloseAfterResponse()
		return enabled, refusal.New(ErrSASLMechanism, auth.ReauthMechanismMessage(mechanism, s.mechanism))
	case !s.authed && s.session != nil:
		c.CloseAfterResponse()
		return enabled, refusal.New(ErrSASLState, "Unexpected SaslHandshake: an exchange is already under way")
	}
	session, err := s.mechanisms.Start(mechanism)
	if err != nil {
		c.CloseAfterResponse()
		return enabled, refusal.New(ErrSASLMechanism, err.Error())
	}
	s.session, s.mechanism, s.handshakeV = session, mechanism, version
	s.reauthing = s.authed
	if version == 0 {
		s.rawNext = true
	}
	return enabled, nil
}

// SASLAuthenticate feeds one SaslAuthenticate token to the exchange. It
// returns the server's token and, once authenticated, the session lifetime
// to report (0: none).
func (c *Conn) SASLAuthenticate(version int16, token []byte) (reply []byte, lifetimeMs int64, err error) {
	s := &c.sec
	if s.mechanisms == nil || s.session == nil || s.handshakeV < 1 {
		c.CloseAfterResponse()
		return nil, 0, refusal.New(ErrSASLState, "Unexpected SaslAuthenticate: no SaslHandshake v1 before it")
	}
	reply, done, err := s.session.Step(token)
	if err != nil {
		c.CloseAfterResponse()
		return nil, 0, c.saslFailure(err)
	}
	if !done {
		return reply, 0, nil
	}
	lifetime, err := c.finishAuth(version)
	if err != nil {
		c.CloseAfterResponse()
		return nil, 0, err
	}
	if version < 1 {
		lifetime = 0
	}
	return reply, lifetime, nil
}

func (c *Conn) saslFailure(err error) error {
	var ae *auth.AuthError
	if errors.As(err, &ae) {
		c.srv.countAuthentication(c.Listener, c.sec.mechanism, false)
		c.logLimited(slog.LevelInfo, "SASL authentication failed", "mechanism", c.sec.mechanism, "reason", ae.Reason())
		return refusal.New(ErrSASLAuthentication, ae.ClientMessage(c.sec.reauthing))
	}
	return refusal.New(ErrSASLState, err.Error())
}

// finishAuth installs the principal of a completed exchange and starts the
// session's lifetime.
func (c *Conn) finishAuth(version int16) (lifetimeMs int64, err error) {
	s := &c.sec
	principal := auth.UserPrincipal(s.session.AuthorizationID())
	if s.authed && principal != c.Principal {
		return 0, refusal.New(ErrSASLAuthentication, auth.PrincipalChangedMessage(c.Principal, principal))
	}
	c.Principal = principal
	s.authed, s.reauthing, s.session, s.authVersion = true, false, nil, version
	if max := c.srv.maxReauth; max > 0 {
		s.expiresAt = time.Now().Add(max)
		lifetimeMs = max.Milliseconds()
	}
	c.srv.countAuthentication(c.Listener, s.mechanism, true)
	c.log.Debug("SASL authenticated", "principal", principal, "mechanism", s.mechanism)
	return lifetimeMs, nil
}

// admit decides, before a request is handled, whether this connection may
// send it now; an error closes the connection.
func (c *Conn) admit(req *Request) error {
	s := &c.sec
	if s.mechanisms == nil {
		return nil
	}
	if req.Key == rawSASLKey {
		if s.session == nil || s.handshakeV != 0 {
			return errors.New("unexpected raw SASL token")
		}
		return nil
	}
	key := kmsg.Key(req.Key)
	if !s.authed {
		switch key {
		case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
			return nil
		}
		return fmt.Errorf("%s before SASL authentication completed", key.Name())
	}
	if !s.expiresAt.IsZero() && !s.reauthing && time.Now().After(s.expiresAt) {
		return errors.New("SASL session expired without re-authentication (connections.max.reauth.ms)")
	}
	return nil
}

// frameBounds is the size range of the next frame: a raw SASL token after a
// SaslHandshake v0 may be small, a Kafka request has at least its header.
// Until a SASL listener has authenticated the connection every frame is at
// most maxSASLToken, as Kafka's authenticator reads them: a client without
// credentials must not make the broker allocate socket.request.max.bytes.
func (c *Conn) frameBounds() (lo, hi int32) {
	if c.sec.rawNext {
		return 0, maxSASLToken
	}
	if c.sec.mechanisms != nil && !c.sec.authed {
		return 8, maxSASLToken
	}
	return 8, c.srv.maxRequestBytes
}

// takeRaw reports whether the frame just read is a raw SASL token.
func (c *Conn) takeRaw() bool {
	raw := c.sec.rawNext
	c.sec.rawNext = false
	return raw
}

func rawRequest(frame []byte) *Request {
	return &Request{Key: rawSASLKey, Size: len(frame), frame: frame}
}

// serveRaw answers a raw SASL token (after SaslHandshake v0): the reply
// goes out as a bare size-prefixed frame. A failure closes the connection,
// as Kafka does when it has no SaslAuthenticate response to carry it.
func (c *Conn) serveRaw(req *Request) ([]byte, error) {
	s := &c.sec
	reply, done, err := s.session.Step(req.frame)
	if err != nil {
		return nil, c.saslFailure(err)
	}
	if done {
		if _, err := c.finishAuth(0); err != nil {
			return nil, err
		}
	} else {
		s.rawNext = true // set before the reply leaves: the client answers it
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(reply)), uint32(len(reply)))
	return append(out, reply...), nil
}
