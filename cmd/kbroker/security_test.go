package main

import (
	"context"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
	"kbroker/internal/config"
	"kbroker/internal/testpki"
)

// aclTargets are brokers with ACL APIs: kbroker with its authorizer on
// (skipped while the broker answers SECURITY_DISABLED) and kfake.
func aclTargets(t *testing.T) map[string][]string {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return map[string][]string{
		"kbroker": startBroker(t, config.Properties{
			"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":           "User:ANONYMOUS",
		}),
		"kfake": {"--bootstrap-server", kf.ListenAddrs()[0]},
	}
}

func TestACLsAddListRemovePrintAsKafka(t *testing.T) {
	for name, bs := range aclTargets(t) {
		t.Run(name, func(t *testing.T) {
			r := kb(t, args(bs, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "orders")...)
			if strings.Contains(r.stderr, "SECURITY_DISABLED") {
				t.Skipf("the broker's authorizer is not wired in yet: %s", r.stderr)
			}
			block := "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n" +
				" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
				"\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n"
			if r.code != 0 || r.stdout != "Adding ACLs for resource "+block+"Current ACLs for resource "+block {
				t.Fatalf("add: exit %d\n%s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			ok(t, args(bs, "acls", "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "Write",
				"--topic", "logs-", "--resource-pattern-type", "prefixed")...)
			ok(t, args(bs, "acls", "--add", "--allow-principal", "User:bob", "--operation", "Alter", "--cluster")...)

			wantOutput(t, ok(t, args(bs, "acls", "--list", "--principal", "User:bob")...),
				"ACLs for principal `User:bob`\n"+
					"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`: \n"+
					" \t(principal=User:bob, host=10.0.0.9, operation=WRITE, permissionType=DENY) \n\n"+
					"Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"+
					" \t(principal=User:bob, host=*, operation=ALTER, permissionType=ALLOW) \n\n")

			ok(t, args(bs, "acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--force")...)
			out := ok(t, args(bs, "acls", "--list", "--format", "json")...)
			if strings.Count(out, `"principal"`) != 3 || strings.Contains(out, `"operation": "READ"`) {
				t.Fatalf("after remove: %s", out)
			}
			ok(t, args(bs, "acls", "--remove", "--topic", "orders")...) // every ACL of the resource
			if out := ok(t, args(bs, "acls", "--list", "--topic", "orders")...); out != "" {
				t.Fatalf("orders still has ACLs:\n%s", out)
			}
			if r := kb(t, args(bs, "acls", "--add", "--allow-principal", "User:x", "--operation", "Fly", "--topic", "t")...); r.code != 2 {
				t.Fatalf("bad operation: %+v", r)
			}
		})
	}
}

func writeProps(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func jaas(module, user, pass string) string {
	return `sasl.jaas.config=org.apache.kafka.common.security.` + module + ` required username="` + user + `" password="` + pass + `";`
}

// --command-config with SASL PLAIN and SCRAM, and a wrong password, against
// kfake (which speaks SASL) and kbroker once it advertises SaslHandshake.
func TestCommandConfigSASL(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "admin-secret"),
		kfake.Superuser("SCRAM-SHA-256", "scrammer", "scram-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	bs := []string{"--bootstrap-server", kf.ListenAddrs()[0]}
	plain := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN", jaas("plain.PlainLoginModule", "admin", "admin-secret"))
	scram := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256", jaas("scram.ScramLoginModule", "scrammer", "scram-secret"))
	wrong := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN", jaas("plain.PlainLoginModule", "admin", "nope"))
	mismatch := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512", jaas("plain.PlainLoginModule", "admin", "x"))

	wantOutput(t, ok(t, args(bs, "topics", "--command-config", plain, "--create", "--topic", "t")...), "Created topic t.\n")
	wantOutput(t, ok(t, args(bs, "topics", "--command-config", scram, "--list")...), "t\n")
	r := kb(t, args(bs, "topics", "--command-config", wrong, "--list", "--timeout", "5s")...)
	// kfake closes the connection where Kafka answers SASL_AUTHENTICATION_FAILED first.
	if r.code != 1 || !strings.Contains(r.stderr, "cannot log in to "+bs[1]+" with SASL PLAIN: ") {
		t.Fatalf("wrong password: %+v", r)
	}
	r = kb(t, args(bs, "topics", "--command-config", mismatch, "--list")...)
	if r.code != 1 || !strings.Contains(r.stderr, "does not go with sasl.mechanism=SCRAM-SHA-512") {
		t.Fatalf("module/mechanism mismatch: %+v", r)
	}
	r = kb(t, args(bs, "topics", "--command-config", writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=GSSAPI", jaas("x.Krb5LoginModule", "a", "b")), "--list")...)
	if r.code != 1 || !strings.Contains(r.stderr, "sasl.mechanism GSSAPI is not supported") {
		t.Fatalf("GSSAPI: %+v", r)
	}
}

func TestCommandConfigSASLAgainstKbroker(t *testing.T) {
	bs := startBroker(t, config.Properties{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	probe, err := admin.New(kgo.SeedBrokers(bs[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if ok, err := probe.Supports(ctx, int16(kmsg.SASLHandshake)); err != nil || !ok {
		t.Skipf("kbroker does not advertise SaslHandshake on a SASL_PLAINTEXT listener yet (supported=%v, err=%v)", ok, err)
	}
	plain := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN", jaas("plain.PlainLoginModule", "admin", "admin-secret"))
	wantOutput(t, ok(t, args(bs, "topics", "--command-config", plain, "--create", "--topic", "t")...), "Created topic t.\n")
	r := kb(t, args(bs, "topics", "--command-config", writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
		jaas("plain.PlainLoginModule", "admin", "wrong")), "--list")...)
	if r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %+v", r)
	}

	// A SCRAM user created by the CLI (salted client-side) can log in.
	ok(t, args(bs, "configs", "--command-config", plain, "--alter", "--entity-type", "users", "--entity-name", "carol",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret]")...)
	carol := writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256", jaas("scram.ScramLoginModule", "carol", "carol-secret"))
	wantOutput(t, ok(t, args(bs, "topics", "--command-config", carol, "--list")...), "t\n")
	r = kb(t, args(bs, "topics", "--command-config", writeProps(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
		jaas("scram.ScramLoginModule", "carol", "wrong")), "--list")...)
	if r.code != 1 || !strings.Contains(r.stderr, "cannot log in to") {
		t.Fatalf("wrong SCRAM password: %+v", r)
	}
}

// Unauthorized: with an authorizer and no ACLs, the anonymous principal may
// do nothing; every command says so and exits 1.
func TestUnauthorizedFailsWithTheAuthorizationError(t *testing.T) {
	bs := startBroker(t, config.Properties{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
	for _, c := range []struct {
		args    []string
		message string
	}{
		{args(bs, "configs", "--alter", "--broker-defaults", "--add-config", "log.retention.ms=1000"), "CLUSTER_AUTHORIZATION_FAILED"},
		{args(bs, "topics", "--create", "--topic", "t"), "TOPIC_AUTHORIZATION_FAILED"},
		{args(bs, "acls", "--list"), "CLUSTER_AUTHORIZATION_FAILED"},
		{args(bs, "configs", "--alter", "--user", "u", "--add-config", "producer_byte_rate=1"), "CLUSTER_AUTHORIZATION_FAILED"},
	} {
		r := kb(t, c.args...)
		if strings.Contains(r.stderr, "SECURITY_DISABLED") {
			t.Skip("the broker's authorizer is not wired in yet")
		}
		if r.code != 1 || !strings.Contains(r.stderr, c.message) {
			t.Fatalf("%v: exit %d, stderr %q; want exit 1 and %s", c.args, r.code, r.stderr, c.message)
		}
	}
}

// --command-config with TLS: a truststore to verify the broker, and a client
// keystore for a listener that requires client certificates (mTLS); without
// the keystore the login fails with a clear message and exit code 1.
func TestCommandConfigTLS(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "cli-admin"})
	keystore, truststore := pki.Files(t)
	bs := startBroker(t, config.Properties{
		"listeners":               "SSL://127.0.0.1:0",
		"ssl.keystore.location":   keystore,
		"ssl.truststore.location": truststore,
		"ssl.client.auth":         "required",
	})
	dir := t.TempDir()
	clientKeystore := filepath.Join(dir, "client.pem")
	if err := os.WriteFile(clientKeystore, append(append([]byte{}, pki.ClientPEM...), pki.ClientKeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	mtls := writeProps(t, "security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location="+truststore,
		"ssl.keystore.type=PEM", "ssl.keystore.location="+clientKeystore)
	wantOutput(t, ok(t, args(bs, "topics", "--command-config", mtls, "--create", "--topic", "tls-t")...), "Created topic tls-t.\n")
	wantOutput(t, ok(t, args(bs, "topics", "--command-config", mtls, "--list")...), "tls-t\n")

	noCert := writeProps(t, "security.protocol=SSL", "ssl.truststore.location="+truststore)
	r := kb(t, args(bs, "topics", "--command-config", noCert, "--list", "--timeout", "5s")...)
	if r.code != 1 || r.stderr == "" {
		t.Fatalf("without a client certificate: exit %d, stderr %q; want exit 1 with a message", r.code, r.stderr)
	}
	plaintext := writeProps(t, "security.protocol=PLAINTEXT")
	if r := kb(t, args(bs, "topics", "--command-config", plaintext, "--list", "--timeout", "5s")...); r.code != 1 {
		t.Fatalf("PLAINTEXT against a TLS listener: exit %d", r.code)
	}
}
