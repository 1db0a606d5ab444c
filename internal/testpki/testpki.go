// Package testpki makes a throwaway certificate authority for tests: a CA,
// a server certificate for 127.0.0.1 and a client certificate, as PEM, so
// tests can start TLS listeners and clients without files from outside.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA made for one test with a server and a client certificate.
type PKI struct {
	CAPEM, ServerPEM, ServerKeyPEM []byte
	ClientPEM, ClientKeyPEM        []byte
	Pool                           *x509.CertPool
	Client                         tls.Certificate
}

// New issues a CA, a broker certificate for 127.0.0.1 (subject CN=broker,
// usable as a server's and as a client's) and a client
// certificate with clientSubject, valid for an hour around now.
func New(t testing.TB, clientSubject pkix.Name) *PKI {
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
	issue := func(serial int64, subject pkix.Name, usage []x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subject, IPAddresses: ips,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	}
	p := &PKI{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	// The broker's certificate is a client's too, as on an mTLS
	// inter-broker listener, where each broker presents it to the others.
	p.ServerPEM, p.ServerKeyPEM = issue(2, pkix.Name{CommonName: "broker"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []net.IP{net.ParseIP("127.0.0.1")})
	p.ClientPEM, p.ClientKeyPEM = issue(3, clientSubject, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
	if p.Client, err = tls.X509KeyPair(p.ClientPEM, p.ClientKeyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

// Files writes the broker's keystore (certificate then key) and the CA to
// PEM files in a temporary directory.
func (p *PKI) Files(t testing.TB) (keystore, truststore string) {
	dir := t.TempDir()
	keystore, truststore = filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keystore, append(append([]byte{}, p.ServerPEM...), p.ServerKeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truststore, p.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return keystore, truststore
}

// ClientTLS is a client configuration trusting the CA, presenting the
// client certificate when withCert.
func (p *PKI) ClientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.Client}
	}
	return cfg
}
