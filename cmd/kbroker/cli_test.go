package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

type result struct {
	stdout, stderr string
	code           int
}

// kb runs the built binary.
func kb(t *testing.T, args ...string) result {
	t.Helper()
	return kbStdin(t, "", args...)
}

func kbStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	bin, err := testbin.Kbroker()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errOut, strings.NewReader(stdin)
	err = cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := kb(t, args...)
	if r.code != 0 {
		t.Fatalf("kbroker %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func startBroker(t *testing.T, extra config.Properties) []string {
	t.Helper()
	props := config.Properties{"auto.create.topics.enable": "false", "node.id": "1"}
	for k, v := range extra {
		props[k] = v
	}
	b := brokertest.Start(t, props)
	return []string{"--bootstrap-server", b.Addr()}
}

func args(bs []string, more ...string) []string {
	return append(append([]string{}, more[:1]...), append(bs, more[1:]...)...)
}

func wantOutput(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}

func TestConfigsDescribeTopicPrintsKafkasFormat(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "topics", "--create", "--topic", "t", "--config", "retention.ms=1000")...), "Created topic t.\n")
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "topics", "--entity-name", "t")...),
		"Dynamic configs for topic t are:\n"+
			"  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}\n")

	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--entity-type", "topics", "--entity-name", "t",
		"--add-config", "cleanup.policy=[compact,delete], segment.ms = 60000", "--delete-config", "retention.ms")...),
		"Completed updating config for topic t.\n")
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--topic", "t")...),
		"Dynamic configs for topic t are:\n"+
			"  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"+
			"  segment.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=60000, DEFAULT_CONFIG:log.roll.hours=168}\n")

	all := ok(t, args(bs, "configs", "--describe", "--all", "--topic", "t")...)
	if !strings.HasPrefix(all, "All configs for topic t are:\n") || !strings.Contains(all, "\n  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}\n") {
		t.Fatalf("--all output:\n%s", all)
	}
	// Every topic when no name is given.
	ok(t, args(bs, "topics", "--create", "--topic", "u")...)
	every := ok(t, args(bs, "configs", "--describe", "--entity-type", "topics")...)
	if !strings.Contains(every, "Dynamic configs for topic t are:\n") || !strings.Contains(every, "Dynamic configs for topic u are:\n") {
		t.Fatalf("describe of every topic:\n%s", every)
	}
}

func TestConfigsBrokersAndDefault(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=86400000")...),
		"Completed updating default config for brokers in the cluster.\n")
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--broker", "1", "--add-config", "log.retention.ms=3600000")...),
		"Completed updating config for broker 1.\n")
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "brokers")...),
		"Dynamic configs for broker 1 are:\n"+
			"  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}\n"+
			"Default configs for brokers in the cluster are:\n"+
			"  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}\n")
}

func TestConfigsQuotasPrintAsKafka(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=20971520",
		"--entity-type", "users", "--entity-name", "user1", "--entity-type", "clients", "--entity-name", "clientA")...),
		"Completed updating config for user user1.\n")
	ok(t, args(bs, "configs", "--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "users", "--entity-name", "user1",
		"--entity-type", "clients", "--entity-default")...)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--add-config", "request_percentage=50", "--client-defaults")...),
		"Completed updating default config for clients in the cluster.\n")

	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "users", "--entity-type", "clients")...),
		"Quota configs for user-principal 'user1', client-id 'clientA' are consumer_byte_rate=2.097152E7, producer_byte_rate=1024.0\n"+
			"Quota configs for user-principal 'user1', the default client-id are producer_byte_rate=4096.0\n")
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "clients", "--entity-default")...),
		"Quota configs for the default client-id are request_percentage=50.0\n")

	ok(t, args(bs, "configs", "--alter", "--delete-config", "request_percentage", "--client-defaults")...)
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--client-defaults")...), "")

	r := kb(t, args(bs, "configs", "--alter", "--delete-config", "producer_byte_rate", "--client-defaults")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Invalid config(s): producer_byte_rate") {
		t.Fatalf("deleting an unset quota: %+v", r)
	}
	r = kb(t, args(bs, "configs", "--alter", "--add-config", "producer_byte_rate=fast", "--user", "u")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Cannot parse quota configuration value for producer_byte_rate: fast") {
		t.Fatalf("non-numeric quota: %+v", r)
	}
	r = kb(t, args(bs, "configs", "--alter", "--add-config", "producer_byte_rate=-5", "--user", "u")...)
	if r.code != 1 || !strings.Contains(r.stderr, "INVALID_REQUEST") {
		t.Fatalf("negative quota: %+v", r)
	}
}

func TestConfigsScramCredentialsOfUsers(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=x]")...),
		"Completed updating config for user alice.\n")
	ok(t, args(bs, "configs", "--alter", "--user", "alice", "--add-config", "producer_byte_rate=10")...)
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "users", "--entity-name", "alice")...),
		"Quota configs for user-principal 'alice' are producer_byte_rate=10.0\n"+
			"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
	ok(t, args(bs, "configs", "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")...)
	wantOutput(t, ok(t, args(bs, "users", "--describe")...),
		"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")

	for _, bad := range [][]string{
		{"--user", "alice", "--add-config", "SCRAM-SHA-256=[password=x],producer_byte_rate=1"},
		{"--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]"},
	} {
		if r := kb(t, args(bs, append([]string{"configs", "--alter"}, bad...)...)...); r.code != 2 {
			t.Fatalf("%v: %+v, want a usage error", bad, r)
		}
	}
	r := kb(t, args(bs, "configs", "--alter", "--user", "bob", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]")...)
	if r.code != 1 || !strings.Contains(r.stderr, "below the minimum 4096") {
		t.Fatalf("too few iterations: %+v", r)
	}
}

func TestUsersUpsertFromStdinDescribeDelete(t *testing.T) {
	bs := startBroker(t, nil)
	r := kbStdin(t, "s3cret\n", args(bs, "users", "--upsert", "--user", "bob", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", "--password-file", "-")...)
	if r.code != 0 || r.stdout != "Completed updating SCRAM credential SCRAM-SHA-512 for user bob.\n" {
		t.Fatalf("upsert: %+v", r)
	}
	wantOutput(t, ok(t, args(bs, "users", "--describe", "--user", "bob")...),
		"SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=8192\n")
	var js []map[string]any
	if err := json.Unmarshal([]byte(ok(t, args(bs, "users", "--describe", "--format", "json")...)), &js); err != nil || len(js) != 1 || js[0]["user"] != "bob" {
		t.Fatalf("json: %v %v", js, err)
	}
	wantOutput(t, ok(t, args(bs, "users", "--delete", "--user", "bob")...), "Deleted SCRAM credential SCRAM-SHA-512 of user bob.\n")
	r = kb(t, args(bs, "users", "--describe", "--user", "bob")...)
	if r.code != 1 || !strings.Contains(r.stderr, "RESOURCE_NOT_FOUND") {
		t.Fatalf("describe of a deleted user: %+v", r)
	}
}

// The round trip: describe a topic as JSON, feed it to --alter of another
// topic, and the two describe alike.
func TestConfigsJSONRoundTrip(t *testing.T) {
	bs := startBroker(t, nil)
	ok(t, args(bs, "topics", "--create", "--topic", "src", "--config", "retention.ms=1000", "--config", "cleanup.policy=compact,delete")...)
	ok(t, args(bs, "configs", "--alter", "--topic", "src", "--add-config", "max.message.bytes=2048,segment.ms=60000")...)
	ok(t, args(bs, "topics", "--create", "--topic", "dst")...)

	for _, all := range []bool{false, true} {
		describe := []string{"configs", "--describe", "--topic", "src", "--format", "json"}
		if all {
			describe = append(describe, "--all")
		}
		file := filepath.Join(t.TempDir(), "src.json")
		if err := os.WriteFile(file, []byte(ok(t, args(bs, describe...)...)), 0o600); err != nil {
			t.Fatal(err)
		}
		wantOutput(t, ok(t, args(bs, "configs", "--alter", "--topic", "dst", "--add-config-file", file)...), "Completed updating config for topic dst.\n")
	}
	src := ok(t, args(bs, "configs", "--describe", "--topic", "src", "--format", "json")...)
	dst := ok(t, args(bs, "configs", "--describe", "--topic", "dst", "--format", "json")...)
	if strings.Replace(src, `"name": "src"`, `"name": "dst"`, 1) != dst {
		t.Fatalf("after the round trip:\nsrc %s\ndst %s", src, dst)
	}
	if !strings.Contains(dst, `"max.message.bytes"`) {
		t.Fatalf("dst lacks the copied configs: %s", dst)
	}

	// A quota entity round-trips the same way.
	ok(t, args(bs, "configs", "--alter", "--user", "a", "--add-config", "producer_byte_rate=1000,consumer_byte_rate=2000")...)
	file := filepath.Join(t.TempDir(), "a.json")
	os.WriteFile(file, []byte(ok(t, args(bs, "configs", "--describe", "--user", "a", "--format", "json")...)), 0o600)
	ok(t, args(bs, "configs", "--alter", "--user", "b", "--add-config-file", file)...)
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--user", "b")...), "Quota configs for user-principal 'b' are consumer_byte_rate=2000.0, producer_byte_rate=1000.0\n")
}

func TestAddConfigFileTakesJavaProperties(t *testing.T) {
	bs := startBroker(t, nil)
	ok(t, args(bs, "topics", "--create", "--topic", "t")...)
	file := filepath.Join(t.TempDir(), "t.properties")
	os.WriteFile(file, []byte("# overrides\nretention.ms=5000\ncleanup.policy = compact\n"), 0o600)
	ok(t, args(bs, "configs", "--alter", "--topic", "t", "--add-config-file", file)...)
	out := ok(t, args(bs, "configs", "--describe", "--topic", "t")...)
	if !strings.Contains(out, "  cleanup.policy=compact ") || !strings.Contains(out, "  retention.ms=5000 ") {
		t.Fatalf("describe after --add-config-file:\n%s", out)
	}
}

func TestFailuresExitNonZeroWithTheBrokersMessage(t *testing.T) {
	bs := startBroker(t, nil)
	ok(t, args(bs, "topics", "--create", "--topic", "t")...)
	cases := []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"invalid value", args(bs, "configs", "--alter", "--topic", "t", "--add-config", "retention.ms=soon"), 1,
			"kbroker configs: TOPIC t: INVALID_CONFIG: Invalid value soon for configuration retention.ms"},
		{"unknown topic", args(bs, "configs", "--describe", "--topic", "nope"), 1,
			"kbroker configs: TOPIC nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{"delete of an unset key", args(bs, "configs", "--alter", "--topic", "t", "--delete-config", "segment.ms"), 1,
			"kbroker configs: Invalid config(s): segment.ms"},
		{"unknown logger", args(bs, "configs", "--alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--add-config", "no.such=DEBUG"), 1,
			"Invalid broker logger(s): no.such"},
		{"unreachable broker", []string{"configs", "--bootstrap-server", "127.0.0.1:1", "--timeout", "3s", "--describe", "--topic", "t"}, 1,
			"kbroker configs: cannot reach the cluster at 127.0.0.1:1: unable to dial"},
		{"no action", args(bs, "configs", "--topic", "t"), 2, "exactly one of --alter, --describe is required"},
		{"alter without name", args(bs, "configs", "--alter", "--entity-type", "topics", "--add-config", "a=b"), 2, "--alter of topics needs --entity-name"},
		{"bad broker id", args(bs, "configs", "--describe", "--entity-type", "brokers", "--entity-name", "one"), 2, "must be a valid integer broker id"},
		{"malformed add-config", args(bs, "configs", "--alter", "--topic", "t", "--add-config", "a=b=c"), 2, `in the format "key=val"`},
		{"three entity types", args(bs, "configs", "--describe", "--entity-type", "users", "--entity-type", "topics"), 2, "only users and clients"},
		{"existing topic", args(bs, "topics", "--create", "--topic", "t"), 1, "TOPIC_ALREADY_EXISTS"},
		{"unknown command", []string{"nope"}, 2, `unknown command "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kb(t, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.message) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, c.code, c.message)
			}
		})
	}
}

func TestTopicsCommands(t *testing.T) {
	bs := startBroker(t, nil)
	ok(t, args(bs, "topics", "--create", "--topic", "orders", "--partitions", "2", "--config", "cleanup.policy=compact")...)
	ok(t, args(bs, "topics", "--create", "--topic", "logs")...)
	if r := kb(t, args(bs, "topics", "--create", "--topic", "logs", "--if-not-exists")...); r.code != 0 || r.stdout != "" {
		t.Fatalf("--if-not-exists: %+v", r)
	}
	wantOutput(t, ok(t, args(bs, "topics", "--list")...), "logs\norders\n")
	ok(t, args(bs, "topics", "--alter", "--topic", "orders", "--partitions", "3")...)
	out := ok(t, args(bs, "topics", "--describe", "--topic", "ord.*")...)
	lines := strings.Split(out, "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Topic: orders\tTopicId: ") ||
		!strings.HasSuffix(lines[0], "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=compact") ||
		lines[3] != "\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: " {
		t.Fatalf("describe:\n%s", out)
	}
	var js []map[string]any
	if err := json.Unmarshal([]byte(ok(t, args(bs, "topics", "--describe", "--format", "json")...)), &js); err != nil || len(js) != 2 {
		t.Fatalf("describe json: %v, %v", js, err)
	}
	if p := js[0]["partitions"].([]any)[0].(map[string]any); p["elr"] == nil || len(p["elr"].([]any)) != 0 || p["last_known_elr"] == nil || p["isr"] == nil {
		t.Fatalf("describe json partition without its ELR fields: %v", p)
	}
	ok(t, args(bs, "topics", "--delete", "--topic", "logs")...)
	wantOutput(t, ok(t, args(bs, "topics", "--list")...), "orders\n")
	if r := kb(t, args(bs, "topics", "--delete", "--topic", "logs")...); r.code != 1 || !strings.Contains(r.stderr, "Topic 'logs' does not exist as expected") {
		t.Fatalf("delete of a missing topic: %+v", r)
	}
	if r := kb(t, args(bs, "topics", "--delete", "--topic", "logs", "--if-exists")...); r.code != 0 {
		t.Fatalf("--if-exists: %+v", r)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"configs", "topics", "acls", "users", "transactions"} {
		r := kb(t, cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:\n  ") || !strings.Contains(r.stdout, "--bootstrap-server") {
			t.Fatalf("%s --help: %+v", cmd, r)
		}
	}
	if r := kb(t, "--help"); r.code != 0 || !strings.Contains(r.stdout, "kbroker configs") {
		t.Fatalf("kbroker --help: %+v", r)
	}
}
