package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/config"
)

// testPKI is a CA made for one test, a server certificate for 127.0.0.1
// and a client certificate.
type testPKI struct {
	caPEM, serverPEM, serverKeyPEM []byte
	pool                           *x509.CertPool
	client                         tls.Certificate
}

func newPKI(t *testing.T, clientSubject pkix.Name) *testPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kbroker test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, IPAddresses: ips,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), key
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.serverPEM, p.serverKeyPEM, _ = issue(2, pkix.Name{CommonName: "broker"}, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	certPEM, keyPEM, _ := issue(3, clientSubject, x509.ExtKeyUsageClientAuth, nil)
	if p.client, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) files(t *testing.T) (keystore, truststore string) {
	dir := t.TempDir()
	keystore, truststore = filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(keystore, append(append([]byte{}, p.serverPEM...), p.serverKeyPEM...), 0o600)
	os.WriteFile(truststore, p.caPEM, 0o600)
	return keystore, truststore
}

func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return cfg
}

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
		"ssl.keystore.certificate.chain": string(pki.serverPEM),
		"ssl.keystore.key":               string(pki.serverKeyPEM),
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
	})).Addr()
	produceConsume(t, addr, scram512("alice", alicePass), "over-tls", kgo.DialTLSConfig(pki.clientTLS(false)))
	if err := client(t, addr, scram512("alice", "bad"), kgo.DialTLSConfig(pki.clientTLS(false))).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bad password over TLS: %v", err)
	}
}
