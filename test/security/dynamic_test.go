package security

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

const encoderSecret = "encoder-secret-dyn-41ab"

// alterBroker applies one IncrementalAlterConfigs to broker 1 and returns
// the resource's error (nil on success).
func alterBroker(t *testing.T, adm *kadm.Client, ops ...kadm.AlterConfig) error {
	t.Helper()
	resp, err := adm.AlterBrokerConfigs(ctxT(t), ops, 1)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	return resp[0].Err
}

func set(key, value string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &value}
}

func del(key string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key} }

// presented dials the TLS listener trusting pki's CA and returns the leaf
// certificate the broker presents, or the handshake error.
func presented(addr string, pki *testPKI) ([]byte, error) {
	conn, err := tls.Dial("tcp", addr, pki.clientTLS(false))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw, nil
}

func certDER(t *testing.T, pemBytes []byte) []byte {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}

// apiVersionsOver sends ApiVersions on an open connection and reads the
// answer: the connection is still served.
func apiVersionsOver(t *testing.T, nc net.Conn) {
	t.Helper()
	rc := testkit.NewRawConn(t, nc)
	rc.RoundTrip(kmsg.NewPtrApiVersionsRequest())
}

// Rotating a listener's key store with AlterConfigs (Kafka's dynamic
// per-broker SSL update): new connections get the new certificate, open
// ones keep theirs, and a key that does not match its certificate is
// refused with INVALID_CONFIG and changes nothing.
func TestDynamicKeystoreRotation(t *testing.T) {
	first, second, third := newPKI(t, pkix.Name{CommonName: "c"}), newPKI(t, pkix.Name{CommonName: "c"}), newPKI(t, pkix.Name{CommonName: "c"})
	secondStore, _ := second.files(t)
	b := start(t, config.Properties{
		"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.name.ssl.ssl.keystore.certificate.chain": string(first.ServerPEM),
		"listener.name.ssl.ssl.keystore.key":               string(first.ServerKeyPEM),
		"password.encoder.secret":                          encoderSecret,
	})
	adm := adminClientOf(client(t, b.Addrs()[0], nil))
	tlsAddr := b.Addrs()[1]
	expect := func(when string, pki *testPKI) {
		t.Helper()
		if cert, err := presented(tlsAddr, pki); err != nil || !bytes.Equal(cert, certDER(t, pki.ServerPEM)) {
			t.Fatalf("%s: the listener does not present the expected certificate (err %v)", when, err)
		}
	}
	expect("at start", first)
	open, err := tls.Dial("tcp", tlsAddr, first.clientTLS(false))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	// A key store file (which takes precedence over inline PEM).
	if err := alterBroker(t, adm, set("listener.name.ssl.ssl.keystore.location", secondStore)); err != nil {
		t.Fatalf("rotating to a key store file: %v", err)
	}
	expect("after rotation to a file", second)
	apiVersionsOver(t, open) // the connection made before is still served

	// Inline PEM (PASSWORD-typed, stored encrypted) over the static one.
	if err := alterBroker(t, adm, del("listener.name.ssl.ssl.keystore.location"),
		set("listener.name.ssl.ssl.keystore.certificate.chain", string(third.ServerPEM)),
		set("listener.name.ssl.ssl.keystore.key", string(third.ServerKeyPEM))); err != nil {
		t.Fatalf("rotating to inline PEM: %v", err)
	}
	expect("after rotation to inline PEM", third)

	// A certificate with another's key: refused, nothing changed.
	err = alterBroker(t, adm, set("listener.name.ssl.ssl.keystore.key", string(second.ServerKeyPEM)))
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("mismatched key: %v, want INVALID_CONFIG", err)
	}
	expect("after a refused change", third)
	// An unrelated change applies, the stored (encrypted) pair with it.
	if err := alterBroker(t, adm, set("listener.name.ssl.ssl.client.auth", "none")); err != nil {
		t.Fatalf("unrelated SSL change: %v", err)
	}
	expect("after an unrelated change", third)
}

// A key store rewritten in place is re-read when its location is altered
// to the path it already has, as Kafka does (the broker sends every altered
// key on, unchanged ones too): new connections get the new certificate. A
// rewrite alone changes nothing, and a file that no longer builds is
// refused with INVALID_CONFIG like any other bad key store.
func TestDynamicKeystoreReloadAtSamePath(t *testing.T) {
	first, second := newPKI(t, pkix.Name{CommonName: "c"}), newPKI(t, pkix.Name{CommonName: "c"})
	store, _ := first.files(t)
	b := start(t, config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": store})
	adm := adminClientOf(client(t, b.Addrs()[0], nil))
	tlsAddr := b.Addrs()[1]
	expect := func(when string, pki *testPKI) {
		t.Helper()
		if cert, err := presented(tlsAddr, pki); err != nil || !bytes.Equal(cert, certDER(t, pki.ServerPEM)) {
			t.Fatalf("%s: the listener does not present the expected certificate (err %v)", when, err)
		}
	}
	rewrite := func(content []byte) {
		t.Helper()
		if err := os.WriteFile(store, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const key = "listener.name.ssl.ssl.keystore.location"
	if err := alterBroker(t, adm, set(key, store)); err != nil {
		t.Fatalf("setting the key store: %v", err)
	}
	expect("at first", first)

	rewrite(append(append([]byte{}, second.ServerPEM...), second.ServerKeyPEM...))
	expect("after the file was rewritten, before any alter", first)
	if err := alterBroker(t, adm, set(key, store)); err != nil {
		t.Fatalf("altering the key store to its own path: %v", err)
	}
	expect("after altering the key store to its own path", second)

	rewrite(append(append([]byte{}, second.ServerPEM...), first.ServerKeyPEM...))
	if err := alterBroker(t, adm, set(key, store)); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("a key store whose key does not match: %v, want INVALID_CONFIG", err)
	}
	expect("after a refused reload", second)
}

// Changing a listener's PLAIN JAAS line with AlterConfigs: a user added
// there logs in on new connections, a user removed no longer does, open
// sessions go on, and a JAAS line that does not parse is refused.
func TestDynamicPlainJAAS(t *testing.T) {
	const carolPass = "carol-secret-2d4e"
	addr := start(t, saslProps(config.Properties{"password.encoder.secret": encoderSecret})).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	adm := adminClientOf(admin)
	alice := client(t, addr, plainAuth("alice", alicePass))
	if err := alice.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := client(t, addr, plainAuth("carol", carolPass)).Ping(ctxT(t)); err == nil {
		t.Fatal("carol logged in before being added")
	}

	const key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + adminPass +
		`" user_admin="` + adminPass + `" user_carol="` + carolPass + `";`
	if err := alterBroker(t, adm, set(key, jaas)); err != nil {
		t.Fatalf("new JAAS line: %v", err)
	}
	if err := client(t, addr, plainAuth("carol", carolPass)).Ping(ctxT(t)); err != nil {
		t.Fatalf("carol, added dynamically: %v", err)
	}
	if err := client(t, addr, plainAuth("alice", alicePass)).Ping(ctxT(t)); err == nil {
		t.Fatal("alice, removed from the JAAS line, still logs in on a new connection")
	}
	if err := alice.Ping(ctxT(t)); err != nil {
		t.Fatalf("alice's open session: %v", err)
	}

	if err := alterBroker(t, adm, set(key, `PlainLoginModule required user_x="unterminated;`)); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("bad JAAS line: %v, want INVALID_CONFIG", err)
	}
	if err := client(t, addr, plainAuth("carol", carolPass)).Ping(ctxT(t)); err != nil {
		t.Fatalf("after a refused change: %v", err)
	}
}
