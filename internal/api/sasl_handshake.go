package api

// SaslHandshake (key 17), v0–v1.
//
// Chooses the SASL mechanism of a connection on a SASL_PLAINTEXT or
// SASL_SSL listener and lists the enabled ones (sasl.enabled.mechanisms:
// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). v1 (KIP-152): the tokens follow in
// SaslAuthenticate requests; v0: the next frames are raw tokens, which the
// connection layer reads and answers itself (internal/wire/sasl.go). A
// mechanism that is not enabled gets UNSUPPORTED_SASL_MECHANISM and the
// connection closes. On an authenticated connection it starts a KIP-368
// re-authentication, which must keep the mechanism. On a listener without
// SASL it answers ILLEGAL_SASL_STATE. Never flexible (KAFKA-9577). GSSAPI
// (Kerberos) and OAUTHBEARER are not implemented.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.SASLHandshake, 0, 1, handleSASLHandshake) }

func handleSASLHandshake(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	enabled, err := c.SASLHandshake(req.Version, req.Mechanism)
	resp.SupportedMechanisms = enabled
	resp.ErrorCode, _ = errorCode(err)
	return resp, nil
}
