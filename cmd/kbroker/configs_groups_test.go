package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigsGroupsLikeKafkaConfigsSh: --entity-type groups sets, shows and
// removes a group's configs before the group exists, prints Kafka's
// sources and synonyms, refuses a value outside the broker's limits with
// Kafka's message, and its JSON round-trips to another group.
func TestConfigsGroupsLikeKafkaConfigsSh(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--entity-type", "groups", "--entity-name", "g1",
		"--add-config", "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")...),
		"Completed updating config for group g1.\n")
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--entity-type", "groups", "--entity-name", "g1")...),
		"Dynamic configs for group g1 are:\n"+
			"  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n"+
			"  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n")

	all := ok(t, args(bs, "configs", "--describe", "--all", "--group", "g1")...)
	for _, want := range []string{
		"All configs for group g1 are:\n",
		"  share.auto.offset.reset=latest sensitive=false synonyms={DEFAULT_CONFIG:share.auto.offset.reset=latest}\n",
		"  share.record.lock.duration.ms=30000 sensitive=false synonyms={DEFAULT_CONFIG:group.share.record.lock.duration.ms=30000}\n",
	} {
		if !strings.Contains(all, want) {
			t.Fatalf("--all output lacks %q:\n%s", want, all)
		}
	}

	r := kb(t, args(bs, "configs", "--alter", "--group", "g1", "--add-config", "consumer.session.timeout.ms=90000")...)
	if r.code == 0 || !strings.Contains(r.stderr, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms") {
		t.Fatalf("out-of-range session timeout: exit %d, stderr %s", r.code, r.stderr)
	}
	r = kb(t, args(bs, "configs", "--alter", "--group", "g1", "--add-config", "consumer.sesion.timeout.ms=50000")...)
	if r.code == 0 || !strings.Contains(r.stderr, "Unknown group config name: consumer.sesion.timeout.ms") {
		t.Fatalf("unknown key: exit %d, stderr %s", r.code, r.stderr)
	}

	// The JSON of one group feeds --alter of another.
	file := filepath.Join(t.TempDir(), "g1.json")
	if err := os.WriteFile(file, []byte(ok(t, args(bs, "configs", "--describe", "--group", "g1", "--format", "json")...)), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, args(bs, "configs", "--alter", "--group", "g2", "--add-config-file", file)...)
	src := ok(t, args(bs, "configs", "--describe", "--group", "g1", "--format", "json")...)
	dst := ok(t, args(bs, "configs", "--describe", "--group", "g2", "--format", "json")...)
	if strings.Replace(src, `"name": "g1"`, `"name": "g2"`, 1) != dst {
		t.Fatalf("after the round trip:\ng1 %s\ng2 %s", src, dst)
	}

	// Every group with configs when none is named; a deleted key is gone.
	every := ok(t, args(bs, "configs", "--describe", "--entity-type", "groups")...)
	if !strings.Contains(every, "Dynamic configs for group g1 are:\n") || !strings.Contains(every, "Dynamic configs for group g2 are:\n") {
		t.Fatalf("describe of every group:\n%s", every)
	}
	ok(t, args(bs, "configs", "--alter", "--group", "g2", "--delete-config", "consumer.session.timeout.ms,consumer.heartbeat.interval.ms")...)
	wantOutput(t, ok(t, args(bs, "configs", "--describe", "--group", "g2")...), "Dynamic configs for group g2 are:\n")
}
