package security

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/config"
	"kbroker/internal/testpki"
)

// testPKI is the test CA of internal/testpki.
type testPKI struct{ *testpki.PKI }

func newPKI(t *testing.T, clientSubject pkix.Name) *testPKI {
	p := testpki.New(t, clientSubject)
	return &testPKI{p}
}

func (p *testPKI) files(t *testing.T) (keystore, truststore string) { return p.Files(t) }

func (p *testPKI) clientTLS(withCert bool) *tls.Config { return p.ClientTLS(withCert) }

// mTLS: the client certificate's subject, as Kafka writes a DN (RFC 2253,
// most specific first), is the principal; without a certificate the client
// is User:ANONYMOUS.
func TestMutualTLSPrincipal(t *testing.T) {
	pki := newPKI(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme, Inc"}, Country: []string{"US"}})
	keystore, truststore := pki.files(t)
	addr := start(t, config.Properties{
		"listeners":               "SSL://127.0.0.1:0",
		"ssl.keystore.location":   keystore,
		"ssl.truststore.location": truststore,
		"ssl.client.auth":         "requested",
		"authorizer.class.name":   standardAuthorizer,
		"super.users":             `User:CN=alice,OU=eng,O=Acme\, Inc,C=US`,
	}).Addr()
	ctx := ctxT(t)
	withCert := kadm.NewClient(client(t, addr, nil, kgo.DialTLSConfig(pki.clientTLS(true))))
	if _, err := withCert.CreateTopic(ctx, 1, 1, nil, "by-cert"); err != nil {
		t.Fatalf("super user by certificate DN: %v", err)
	}
	anonymous := kadm.NewClient(client(t, addr, nil, kgo.DialTLSConfig(pki.clientTLS(false))))
	res, err := anonymous.CreateTopic(ctx, 1, 1, nil, "anon")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("anonymous TLS client: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

func TestTLSClientAuthRequired(t *testing.T) {
	pki := newPKI(t, pkix.Name{CommonName: "bob"})
	keystore, truststore := pki.files(t)
	addr := start(t, config.Properties{
		"listeners": "SSL://127.0.0.1:0",
		"listener.name.ssl.ssl.keystore.location":   keystore,
		"listener.name.ssl.ssl.truststore.location": truststore,
		"listener.name.ssl.ssl.client.auth":         "required",
	}).Addr()
	if err := client(t, addr, nil, kgo.DialTLSConfig(pki.clientTLS(true))).Ping(ctxT(t)); err != nil {
		t.Fatalf("with certificate: %v", err)
	}
	if err := client(t, addr, nil, kgo.DialTLSConfig(pki.clientTLS(false))).Ping(ctxT(t)); err == nil {
		t.Fatal("a client without certificate was served with ssl.client.auth=required")
	}
}

// SASL_SSL with the key pair given inline (ssl.keystore.certificate.chain,
// ssl.keystore.key) and SCRAM inside TLS.
func TestSASLOverTLS(t *testing.T) {
	pki := newPKI(t, pkix.Name{CommonName: "unused"})
	addr := start(t, saslProps(config.Properties{
		"listeners":                      "SASL_SSL://127.0.0.1:0",
		"ssl.keystore.certificate.chain": string(pki.ServerPEM),
		"ssl.keystore.key":               string(pki.ServerKeyPEM),
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
	})).Addr()
	produceConsume(t, addr, scram512("alice", alicePass), "over-tls", kgo.DialTLSConfig(pki.clientTLS(false)))
	if err := client(t, addr, scram512("alice", "bad"), kgo.DialTLSConfig(pki.clientTLS(false))).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bad password over TLS: %v", err)
	}
}
