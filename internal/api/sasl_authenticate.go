package api

// SaslAuthenticate (key 36), v0–v2.
//
// Carries one SASL token of the exchange chosen by SaslHandshake v1 and the
// server's reply. PLAIN takes one round trip, SCRAM two. A failure answers
// SASL_AUTHENTICATION_FAILED with Kafka's message (never revealing whether
// the user exists) and closes the connection. On success the connection's
// principal becomes User:<name>; v1+ (KIP-368) reports the session lifetime
// (connections.max.reauth.ms, 0 when unset) after which the client must
// re-authenticate on the same connection. v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.SASLAuthenticate, 0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	reply, lifetime, err := c.SASLAuthenticate(req.Version, req.SASLAuthBytes)
	resp.SASLAuthBytes = reply
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = lifetime
	resp.ErrorCode, resp.ErrorMessage = errorCode(err)
	return resp, nil
}
