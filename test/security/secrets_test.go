package security

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/internal/config"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Sensitive values set in server.properties and dynamically never come
// back in a response, a log line (at DEBUG) or /metrics, and dynamic ones
// are encrypted in the metadata store.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		encoderSecret = "encoder-secret-5d1e"
		keystorePass  = "keystore-pass-0b2c"
		dynamicPass   = "dynamic-pass-88aa"
	)
	secrets := []string{adminPass, alicePass, encoderSecret, keystorePass, dynamicPass}
	logs := &lockedBuffer{}
	dir := t.TempDir()
	b := start(t, secured(config.Properties{
		"log.dirs":                dir,
		"password.encoder.secret": encoderSecret,
		"ssl.keystore.password":   keystorePass,
		"metrics.listener":        "127.0.0.1:0",
	}), broker.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	addr := b.Addr()
	produceConsume(t, addr, scram256("admin", adminPass), "traffic")
	if err := client(t, addr, plainAuth("alice", alicePass)).Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	client(t, addr, plainAuth("alice", alicePass+"-wrong")).Ping(ctxT(t)) // a failure is logged too
	admin := client(t, addr, scram256("admin", adminPass))

	var responses bytes.Buffer
	record := func(resp kmsg.Response) { fmt.Fprintf(&responses, "%+v\n", resp) }

	// A dynamic password config is accepted with the encoder secret set...
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	for _, key := range []string{"ssl.truststore.password", "listener.name.sasl_plaintext.ssl.key.password"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		v := dynamicPass
		c.Name, c.Value = key, &v
		rr.Configs = append(rr.Configs, c)
	}
	alter.Resources = append(alter.Resources, rr)
	resp := issue(t, admin, alter).(*kmsg.IncrementalAlterConfigsResponse)
	record(resp)
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("setting dynamic passwords: %v %v", kerr.ErrorForCode(code), resp.Resources[0].ErrorMessage)
	}

	// ...and described as sensitive, with null values.
	describe := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeTopic, "traffic"}} {
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = r.typ, r.name
		describe.Resources = append(describe.Resources, dr)
	}
	describe.IncludeSynonyms, describe.IncludeDocumentation = true, true
	dresp := issue(t, admin, describe).(*kmsg.DescribeConfigsResponse)
	record(dresp)
	sensitive := map[string]bool{}
	for _, res := range dresp.Resources {
		for _, c := range res.Configs {
			if c.IsSensitive {
				sensitive[c.Name] = true
				if c.Value != nil {
					t.Errorf("%s: sensitive with a value", c.Name)
				}
			}
		}
	}
	for _, key := range []string{"ssl.keystore.password", "ssl.truststore.password", "password.encoder.secret",
		"kbroker.scram.bootstrap.users", "listener.name.sasl_plaintext.plain.sasl.jaas.config", "listener.name.sasl_plaintext.ssl.key.password"} {
		if !sensitive[key] {
			t.Errorf("%s is not described as sensitive", key)
		}
	}
	scram := issue(t, admin, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	record(scram)

	metrics, err := http.Get("http://" + b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()

	b.Close()
	store, err := os.ReadFile(filepath.Join(dir, broker.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		for where, text := range map[string]string{"responses": responses.String(), "logs": logs.String(), "metrics": string(body)} {
			if strings.Contains(text, s) {
				t.Errorf("secret %q found in %s", s, where)
			}
		}
	}
	if bytes.Contains(store, []byte(dynamicPass)) {
		t.Error("a dynamic password is stored in clear")
	}
	if !strings.Contains(logs.String(), "config changed") {
		t.Error("the audit log did not record the change (test sees nothing)")
	}
}

// Without password.encoder.secret a dynamic password config is refused.
func TestDynamicPasswordNeedsEncoderSecret(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	v := "x"
	c.Name, c.Value = "ssl.keystore.password", &v
	rr.Configs = append(rr.Configs, c)
	alter.Resources = append(alter.Resources, rr)
	if code := issue(t, admin, alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != kerr.InvalidConfig.Code {
		t.Fatalf("got %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
}
