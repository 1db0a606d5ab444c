package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kbroker/internal/config"
)

// examplePolicies is the README's example rule file.
const examplePolicies = "../../internal/celpolicy/testdata/policies.yaml"

func TestPoliciesCheckEvaluatesSamples(t *testing.T) {
	samples := filepath.Join(t.TempDir(), "samples.json")
	os.WriteFile(samples, []byte(`[
 {"operation":"alter-configs","principal":"User:alice","resource":{"type":"topic","name":"team.orders"},"changes":{"retention.ms":"60000"},"expect":"deny"},
 {"operation":"create-topic","principal":"User:alice","topic":{"name":"payments.events","partitions":12,"replication_factor":3},"expect":"allow"},
 {"operation":"alter-client-quotas","entity":{"user":"alice"},"quotas":{"producer_byte_rate":209715200},"expect":"deny"}
]`), 0o600)
	out := ok(t, "policies", "--check", examplePolicies, "--requests", samples)
	for _, want := range []string{
		examplePolicies + ": 8 rules compile.\n",
		"request 1: alter-configs topic team.orders by User:alice\n  deny   retention-bounds: retention.ms must be between 1h and 30d (archive.* topics excepted), not 60000\n  skip   compact-needs-min-lag (match is false)\n  skip   platform-only-durability (match is false)\n  => deny\n",
		"  allow  max-partitions\n  allow  min-replication\n  allow  topic-naming\n  => allow\n",
		"  deny   producer-rate-cap: producer_byte_rate of users/alice may be at most 100 MiB/s, not 209715200\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A sample that does not get what it expects fails the check.
	r := kb(t, "policies", "--check", examplePolicies, "--request",
		`{"operation":"create-topic","topic":{"name":"Bad_Name","partitions":1,"replication_factor":3},"expect":"allow"}`)
	if r.code != 1 || !strings.Contains(r.stdout, "deny   topic-naming: topic name Bad_Name must be") || !strings.Contains(r.stdout, "=> deny (expected allow)") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A rule that does not compile: its file, line and CEL error.
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(broken, []byte("rules:\n- name: typo\n  on: create-topic\n  validate: resource.name > 1\n"), 0o600)
	r = kb(t, "policies", "--check", broken)
	if want := broken + `:4: rule "typo": validate: found no matching overload for '_>_'`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if r := kb(t, "policies", "--request", "{}"); r.code != 2 {
		t.Errorf("without --check: exit %d", r.code)
	}
}

func TestConfigsAlterDryRunNamesTheRule(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "policies.yaml")
	os.WriteFile(rules, []byte(`rules:
- name: retention-min
  on: alter-configs
  match: '"retention.ms" in changes && changes["retention.ms"] != null'
  validate: millis(changes["retention.ms"]) >= duration("1h")
  message: '"retention.ms below 1h: " + changes["retention.ms"]'
`), 0o600)
	bs := startBroker(t, config.Properties{"kbroker.policy.file": rules})
	ok(t, args(bs, "topics", "--create", "--topic", "t")...)
	r := kb(t, args(bs, "configs", "--alter", "--topic", "t", "--add-config", "retention.ms=60000", "--dry-run")...)
	if r.code != 1 || r.stdout != "Dry run: rejected by policy rule retention-min: retention.ms below 1h: 60000\n" ||
		!strings.Contains(r.stderr, "POLICY_VIOLATION") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	out := ok(t, args(bs, "configs", "--alter", "--topic", "t", "--add-config", "retention.ms=7200000", "--dry-run")...)
	wantOutput(t, out, "Dry run: the change is valid and allowed by the policies; nothing was changed.\n")
	if out := ok(t, args(bs, "configs", "--describe", "--topic", "t")...); strings.Contains(out, "retention.ms") {
		t.Errorf("a dry run changed the topic:\n%s", out)
	}
}

func TestPoliciesApplyStoresTheRulesInTheCluster(t *testing.T) {
	bs := startBroker(t, nil)
	out := ok(t, args(bs, "policies", "--apply", examplePolicies)...)
	wantOutput(t, out, examplePolicies+": 8 rules compile.\nStored the policy rules in the cluster; every broker without kbroker.policy.file uses them.\n")
	r := kb(t, args(bs, "topics", "--create", "--topic", "payments.events")...)
	if r.code != 1 || !strings.Contains(r.stderr, "topic payments.events needs a replication factor of at least 3, not 1 (policy rule min-replication)") {
		t.Fatalf("create under the stored rules: exit %d, %s", r.code, r.stderr)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(broken, []byte("- name: a\n  on: create-topic\n"), 0o600)
	if r := kb(t, args(bs, "policies", "--apply", broken)...); r.code != 1 || !strings.Contains(r.stderr, broken+`:1: rule "a": validate is missing`) {
		t.Errorf("apply a broken file: exit %d, %s", r.code, r.stderr)
	}
	wantOutput(t, ok(t, args(bs, "policies", "--remove")...), "Removed the cluster's stored policy rules.\n")
	ok(t, args(bs, "topics", "--create", "--topic", "payments.events")...)
}
