package wire

// TLS on SSL and SASL_SSL listeners. The handshake runs on the connection's
// own goroutine before the first request. On an SSL listener a verified
// client certificate names the principal, as Kafka's
// DefaultKafkaPrincipalBuilder does with ssl.principal.mapping.rules=DEFAULT:
// "User:" + the subject's distinguished name in RFC 2253 form
// (X500Principal.getName()); without a certificate the principal stays
// User:ANONYMOUS. On SASL_SSL the SASL exchange names the principal.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"
)

// tlsHandshakeTimeout bounds a TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// wrapTLS returns nc as the server side of a TLS connection when the
// listener has TLS (cfg, its config when the connection was accepted).
func wrapTLS(nc net.Conn, cfg *tls.Config) net.Conn {
	if cfg == nil {
		return nc
	}
	return tls.Server(nc, cfg)
}

// handshakeTLS completes the TLS handshake, if any, and derives the
// principal from the client certificate on SSL listeners.
func (c *Conn) handshakeTLS(ctx context.Context) error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	if c.sec.mechanisms != nil {
		return nil
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		c.Principal = "User:" + DistinguishedName(certs[0])
	}
	return nil
}

// rfc2253Keywords are the attribute names Java's X500Principal.getName()
// (RFC 2253 format) writes as keywords; every other attribute is written as
// its OID with the DER value in hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName renders cert's subject as Java's
// X500Principal.getName() does (RFC 2253): the RDNs in reverse order of the
// certificate's sequence, comma-separated without spaces, multi-valued RDNs
// joined by '+', special characters escaped with '\'.
func DistinguishedName(cert *x509.Certificate) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, atv)
		}
	}
	return b.String()
}

func writeAttribute(b *strings.Builder, atv pkix.AttributeTypeAndValue) {
	oid := atv.Type.String()
	kw, known := rfc2253Keywords[oid]
	s, isString := atv.Value.(string)
	if !known || !isString {
		b.WriteString(oid)
		b.WriteString("=#")
		der, err := asn1.Marshal(atv.Value)
		if err == nil {
			b.WriteString(hex.EncodeToString(der))
		}
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	b.WriteString(escapeDNValue(s))
}

// escapeDNValue applies RFC 2253 §2.4 escaping as Java does.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case strings.IndexByte(",+\"\\<>;", ch) >= 0,
			i == 0 && (ch == '#' || ch == ' '),
			i == len(s)-1 && ch == ' ':
			b.WriteByte('\\')
		}
		b.WriteByte(ch)
	}
	return b.String()
}
