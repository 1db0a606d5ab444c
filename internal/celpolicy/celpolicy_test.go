package celpolicy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"kbroker/policy"
)

func ptr[T any](v T) *T { return &v }

func mustLoad(t testing.TB, path string) *RuleSet {
	t.Helper()
	set, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func engineWith(t testing.TB, set *RuleSet) *Engine {
	e := New()
	e.Swap(set)
	return e
}

// violation is the rule that rejected err ("" when err is nil).
func violation(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("not a violation: %v", err)
	}
	return v.Rule
}

func topicAlter(name, principal string, changes map[string]*string, resulting map[string]string) policy.AlterConfigRequest {
	return policy.AlterConfigRequest{Resource: policy.ConfigResource{Type: policy.Topic, Name: name},
		Configs: changes, Resulting: resulting, Requester: policy.Requester{Principal: principal, ClientAddress: "127.0.0.1:5000", Listener: "PLAINTEXT"}}
}

// TestExamplePolicies runs the README's example rules (testdata/policies.yaml)
// against the requests each one is about.
func TestExamplePolicies(t *testing.T) {
	e := engineWith(t, mustLoad(t, "testdata/policies.yaml"))
	base := map[string]string{"cleanup.policy": "delete", "min.compaction.lag.ms": "0", "retention.ms": "604800000"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	alters := []struct {
		name      string
		topic     string
		principal string
		changes   map[string]*string
		resulting map[string]string
		rule      string
	}{
		{"retention in bounds", "team.orders", "User:alice", map[string]*string{"retention.ms": ptr("86400000")}, with("retention.ms", "86400000"), ""},
		{"retention too short", "team.orders", "User:alice", map[string]*string{"retention.ms": ptr("60000")}, with("retention.ms", "60000"), "retention-bounds"},
		{"retention forever", "team.orders", "User:alice", map[string]*string{"retention.ms": ptr("-1")}, with("retention.ms", "-1"), "retention-bounds"},
		{"retention of archive", "archive.orders", "User:alice", map[string]*string{"retention.ms": ptr("-1")}, with("retention.ms", "-1"), ""},
		{"retention deleted", "team.orders", "User:alice", map[string]*string{"retention.ms": nil}, base, ""},
		{"compact without lag", "team.orders", "User:alice", map[string]*string{"cleanup.policy": ptr("compact")}, with("cleanup.policy", "compact"), "compact-needs-min-lag"},
		{"compact with lag", "team.orders", "User:alice", map[string]*string{"cleanup.policy": ptr("compact,delete"), "min.compaction.lag.ms": ptr("1000")},
			with("cleanup.policy", "compact,delete", "min.compaction.lag.ms", "1000"), ""},
		{"min.insync by alice", "team.orders", "User:alice", map[string]*string{"min.insync.replicas": ptr("1")}, with("min.insync.replicas", "1"), "platform-only-durability"},
		{"min.insync by platform", "team.orders", "User:platform", map[string]*string{"min.insync.replicas": ptr("1")}, with("min.insync.replicas", "1"), ""},
		{"unclean deleted by alice", "team.orders", "User:alice", map[string]*string{"unclean.leader.election.enable": nil}, base, "platform-only-durability"},
	}
	for _, c := range alters {
		err := e.ValidateAlterConfig(topicAlter(c.topic, c.principal, c.changes, c.resulting))
		if got := violation(t, err); got != c.rule {
			t.Errorf("%s: rejected by %q (%v), want %q", c.name, got, err, c.rule)
		}
	}
	if err := e.ValidateAlterConfig(topicAlter("team.orders", "User:alice", map[string]*string{"retention.ms": ptr("60000")}, nil)); err == nil ||
		err.Error() != "retention.ms must be between 1h and 30d (archive.* topics excepted), not 60000 (policy rule retention-bounds)" {
		t.Errorf("message: %v", err)
	}

	creates := []struct {
		req  policy.CreateTopicRequest
		rule string
	}{
		{policy.CreateTopicRequest{Topic: "payments.events", NumPartitions: ptr(int32(12)), ReplicationFactor: ptr(int16(3))}, ""},
		{policy.CreateTopicRequest{Topic: "payments.events.v2", NumPartitions: ptr(int32(101)), ReplicationFactor: ptr(int16(3))}, "max-partitions"},
		{policy.CreateTopicRequest{Topic: "payments.events", NumPartitions: ptr(int32(1)), ReplicationFactor: ptr(int16(1))}, "min-replication"},
		{policy.CreateTopicRequest{Topic: "Payments", NumPartitions: ptr(int32(1)), ReplicationFactor: ptr(int16(3))}, "topic-naming"},
		{policy.CreateTopicRequest{Topic: "payments.events", Assignments: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3}}}, "min-replication"},
		{policy.CreateTopicRequest{Topic: "payments.state", NumPartitions: ptr(int32(1)), ReplicationFactor: ptr(int16(3)),
			Configs: map[string]string{"cleanup.policy": "compact"}}, "compact-needs-min-lag"},
		{policy.CreateTopicRequest{Topic: "payments.state", NumPartitions: ptr(int32(1)), ReplicationFactor: ptr(int16(3)),
			Configs: map[string]string{"retention.ms": "1000"}}, "retention-bounds"},
	}
	for _, c := range creates {
		if got := violation(t, e.ValidateCreateTopic(c.req)); got != c.rule {
			t.Errorf("create %s: rejected by %q, want %q", c.req.Topic, got, c.rule)
		}
	}
	if got := violation(t, e.ValidateCreatePartitions(policy.CreatePartitionsRequest{Topic: "a.b", CurrentPartitions: 90, NewPartitions: 120})); got != "max-partitions" {
		t.Errorf("create-partitions to 120: %q", got)
	}
	if got := violation(t, e.ValidateCreatePartitions(policy.CreatePartitionsRequest{Topic: "a.b", CurrentPartitions: 90, NewPartitions: 100})); got != "" {
		t.Errorf("create-partitions to 100: %q", got)
	}

	quotas := []struct {
		entity    map[string]string
		resulting map[string]float64
		rule      string
	}{
		{map[string]string{"user": "alice"}, map[string]float64{"producer_byte_rate": 50 << 20}, ""},
		{map[string]string{"user": "alice", "client-id": "app"}, map[string]float64{"producer_byte_rate": 200 << 20}, "producer-rate-cap"},
		{map[string]string{"client-id": "app"}, map[string]float64{"producer_byte_rate": 200 << 20}, ""},
		{map[string]string{"user": "<default>"}, map[string]float64{"producer_byte_rate": 1 << 20}, "default-user-quotas"},
		{map[string]string{"user": "<default>"}, map[string]float64{"producer_byte_rate": 1 << 20, "consumer_byte_rate": 1 << 20}, ""},
	}
	for _, c := range quotas {
		err := e.ValidateAlterClientQuotas(policy.ClientQuotaRequest{Entity: c.entity, Resulting: c.resulting})
		if got := violation(t, err); got != c.rule {
			t.Errorf("quota %v %v: rejected by %q (%v), want %q", c.entity, c.resulting, got, err, c.rule)
		}
	}
}

// TestGoPolicyRunsAfterRules: the embedder's Go policy sees only what the
// rules allowed, and its own refusal still reaches the client.
func TestGoPolicyRunsAfterRules(t *testing.T) {
	set, err := Compile("inline.yaml", []byte(`
- name: no-x
  on: alter-configs
  validate: '!resource.name.startsWith("x")'
`))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	e := engineWith(t, set)
	e.AlterConfig = policy.AlterConfigFunc(func(r policy.AlterConfigRequest) error {
		seen = append(seen, r.Resource.Name)
		if r.Resource.Name == "go-says-no" {
			return errors.New("go policy")
		}
		return nil
	})
	var rejected []Rejection
	e.OnReject = func(r Rejection) { rejected = append(rejected, r) }
	for _, name := range []string{"xa", "ok", "go-says-no"} {
		e.ValidateAlterConfig(topicAlter(name, "User:bob", nil, nil))
	}
	if fmt.Sprint(seen) != "[ok go-says-no]" {
		t.Errorf("the Go policy saw %v", seen)
	}
	if len(rejected) != 1 || rejected[0].Rule != "no-x" || rejected[0].Principal != "User:bob" || rejected[0].Resource != "topic xa" ||
		rejected[0].Message != "the change is not allowed by policy rule no-x" {
		t.Errorf("rejections: %+v", rejected)
	}
}

// TestCompileErrors: every kind of broken rule file names its file, line
// and problem.
func TestCompileErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"rules:\n- name: a\n  on: alter-configs\n  validate: foo > 1\n", "f.yaml:4: rule \"a\": validate: undeclared reference to 'foo'"},
		{"rules:\n- name: a\n  on: alter-configs\n  validate: |\n    true &&\n    )\n", "f.yaml:6: rule \"a\": validate: Syntax error"},
		{"rules:\n- name: a\n  on: alter-configs\n  validate: '\"x\"'\n", "f.yaml:4: rule \"a\": validate must be a bool expression, not string"},
		{"rules:\n- name: a\n  on: alter-configs\n  validate: 'true'\n  message: '1 + 2'\n", "f.yaml:5: rule \"a\": message must be a string expression, not int"},
		{"rules:\n- name: a\n  on: delete-topic\n  validate: 'true'\n", "f.yaml:3: rule \"a\": unknown operation \"delete-topic\""},
		{"rules:\n- name: a\n  on: alter-configs\n", "f.yaml:2: rule \"a\": validate is missing"},
		{"rules:\n- on: alter-configs\n  validate: 'true'\n", "f.yaml:2: a rule needs a name"},
		{"rules:\n- name: a\n  on: alter-configs\n  validate: 'true'\n  valdiate: 'false'\n", "f.yaml:5: rule \"a\": unknown field \"valdiate\""},
		{"rules:\n- name: a\n  on: alter-configs\n  validate: 'true'\n- name: a\n  on: create-topic\n  validate: 'true'\n", "f.yaml:5: rule \"a\": a second rule with this name (the first is on line 2)"},
		{"rules: [\n", "f.yaml:"},
		{"rule:\n- name: a\n", "f.yaml:1: unknown field \"rule\""},
	}
	for _, c := range cases {
		_, err := Compile("f.yaml", []byte(c.file))
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s…", c.file, err, c.want)
		}
	}
	if set, err := Compile("empty.yaml", nil); err != nil || len(set.Rules) != 0 {
		t.Errorf("an empty file: %v %v", set, err)
	}
}

// TestEvaluationErrorRejects: a rule that cannot decide (a value that is
// not a number) does not let the change through.
func TestEvaluationErrorRejects(t *testing.T) {
	set, err := Compile("f.yaml", []byte("- name: n\n  on: alter-configs\n  validate: int(changes['retention.ms']) > 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = engineWith(t, set).ValidateAlterConfig(topicAlter("t", "User:a", map[string]*string{"segment.ms": ptr("1")}, nil))
	if violation(t, err) != "n" || !strings.Contains(err.Error(), "could not be evaluated") {
		t.Errorf("%v", err)
	}
}

func TestUnits(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1h30m": 90 * time.Minute, "500ms": 500 * time.Millisecond, "2w": 14 * 24 * time.Hour, "-1s": -time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "7", "d", "1x", "99999999999999999999d", "100000000w"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"100MiB": 100 << 20, "1GB": 1e9, "512": 512, "2 KiB": 2048, "1B": 1} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "MiB", "1.5MiB", "9999999999TiB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

// TestManyRulesNameTheFirstThatRejects: with more rules than one combined
// program holds, and groups remembering answers, the rule named is the
// first in file order that rejects, for each resource.
func TestManyRulesNameTheFirstThatRejects(t *testing.T) {
	var b strings.Builder
	for i := range 70 {
		// Even rules read only changes (remembered), odd ones the name.
		if i%2 == 0 {
			fmt.Fprintf(&b, "- name: c%d\n  on: alter-configs\n  validate: '!(\"k%d\" in changes)'\n", i, i)
		} else {
			fmt.Fprintf(&b, "- name: n%d\n  on: alter-configs\n  validate: 'resource.name != \"t%d\"'\n", i, i)
		}
	}
	set, err := Compile("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	e := engineWith(t, set)
	v := "1"
	cases := []struct {
		topic string
		key   string
		rule  string
	}{
		{"t65", "k64", "c64"}, {"t65", "k66", "n65"}, {"t3", "k66", "n3"}, {"x", "k66", "c66"}, {"x", "k1", ""}, {"t69", "k1", "n69"},
	}
	for range 2 { // the second round answers from memory
		for _, c := range cases {
			got := violation(t, e.ValidateAlterConfig(topicAlter(c.topic, "User:a", map[string]*string{c.key: &v}, nil)))
			if got != c.rule {
				t.Errorf("%s changing %s: rejected by %q, want %q", c.topic, c.key, got, c.rule)
			}
		}
	}
}
