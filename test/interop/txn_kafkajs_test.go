package interop

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"kbroker/internal/testkit"
)

// kafkajs's producer.transaction() commits one transaction, aborts one and
// commits another; a consumer with readUncommitted: false (its default,
// read_committed) gets the committed records only, one with
// readUncommitted: true every record.
func TestKafkajsTransactions(t *testing.T) {
	node, _ := kafkajsScript(t)
	addr := startBroker(t, txnProps)
	testkit.CreateTopic(t, newAdmin(t, addr), "kjs-txn", 1, nil)
	out := runCmd(t, 90*time.Second, "", node, filepath.Join("node", "transactions.js"), addr, "kjs-txn", "kjs-txn")
	var res struct{ ReadCommitted, ReadUncommitted []string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("transactions.js printed %q: %v", out, err)
	}
	committed := []string{"c0", "c1", "c2", "c3", "c4", "d0", "d1", "d2", "d3", "d4"}
	all := []string{"c0", "c1", "c2", "c3", "c4", "a0", "a1", "a2", "a3", "a4", "d0", "d1", "d2", "d3", "d4"}
	if !slices.Equal(res.ReadCommitted, committed) {
		t.Fatalf("readUncommitted: false: %v, want %v", res.ReadCommitted, committed)
	}
	if !slices.Equal(res.ReadUncommitted, all) {
		t.Fatalf("readUncommitted: true: %v, want %v", res.ReadUncommitted, all)
	}
}
