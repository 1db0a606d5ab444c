package security

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kbroker/internal/config"
)

// A CEL policy rule sees the principal a kafkajs admin authenticated as
// over SASL (issue 20): the same AlterConfigs of min.insync.replicas is
// refused with POLICY_VIOLATION for alice and applied for admin, and the
// refusal reaches kafkajs as its own error type.
func TestKafkajsPrincipalReachesPolicyRules(t *testing.T) {
	node, err := exec.LookPath("node")
	script, _ := filepath.Abs(filepath.Join("..", "interop", "node", "admin.js"))
	if _, statErr := os.Stat(filepath.Join("..", "interop", "node", "node_modules", "kafkajs", "package.json")); err != nil || statErr != nil {
		if os.Getenv("CI") == "" {
			t.Skip("node or kafkajs missing (npm ci --prefix test/interop/node); set CI=1 to make this a failure")
		}
		t.Fatalf("node or kafkajs missing under CI: %v %v", err, statErr)
	}
	rules := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
- name: admin-only-durability
  on: alter-configs
  match: '"min.insync.replicas" in changes'
  validate: 'principal.full == "User:admin"'
  message: 'principal.full + " may not change min.insync.replicas"'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := start(t, saslProps(config.Properties{"kbroker.policy.file": rules})).Addr()
	run := func(user, pass string, steps string) []json.RawMessage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, addr)
		cmd.Env = append(os.Environ(), "KJS_SASL_MECHANISM=plain", "KJS_SASL_USERNAME="+user, "KJS_SASL_PASSWORD="+pass)
		cmd.Stdin = strings.NewReader(steps)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("admin.js as %s: %v\n%s", user, err, out)
		}
		var res []json.RawMessage
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("admin.js as %s: %v\n%s", user, err, out)
		}
		return res
	}
	run("admin", adminPass, `[{"call":"createTopics","args":{"topics":[{"topic":"durable","numPartitions":1}]}}]`)
	alter := `[{"call":"alterConfigs","args":{"validateOnly":false,"resources":[{"type":"TOPIC","name":"durable","configEntries":[{"name":"min.insync.replicas","value":"1"}]}]}}]`

	var refused struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(run("alice", alicePass, alter)[0], &refused); err != nil || refused.Error.Type != "POLICY_VIOLATION" {
		t.Fatalf("alice's change: %+v %v, want kafkajs's POLICY_VIOLATION", refused, err)
	}
	var allowed struct {
		Error *json.RawMessage `json:"error"`
	}
	if res := run("admin", adminPass, alter); json.Unmarshal(res[0], &allowed) != nil || allowed.Error != nil {
		t.Fatalf("admin's change was refused: %s", res[0])
	}
}
