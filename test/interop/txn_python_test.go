package interop

import (
	"slices"
	"testing"

	"kbroker/internal/testkit"
)

// confluent-kafka (librdkafka) runs init_transactions, commits one
// transaction, aborts one and commits another; its read_committed
// consumer gets the committed records only, its read_uncommitted one
// every record.
func TestConfluentKafkaPythonTransactions(t *testing.T) {
	py := pythonWith(t, "confluent_kafka", "python3-confluent-kafka")
	addr := startBroker(t, txnProps)
	testkit.CreateTopic(t, newAdmin(t, addr), "ck-txn", 1, nil)
	var res struct {
		ReadCommitted   []string `json:"read_committed"`
		ReadUncommitted []string `json:"read_uncommitted"`
	}
	runPython(t, py, "confluent_txn.py", &res, addr, "ck-txn", "ck-txn")
	committed := []string{"c0", "c1", "c2", "c3", "c4", "d0", "d1", "d2", "d3", "d4"}
	all := []string{"c0", "c1", "c2", "c3", "c4", "a0", "a1", "a2", "a3", "a4", "d0", "d1", "d2", "d3", "d4"}
	if !slices.Equal(res.ReadCommitted, committed) {
		t.Fatalf("read_committed: %v, want %v", res.ReadCommitted, committed)
	}
	if !slices.Equal(res.ReadUncommitted, all) {
		t.Fatalf("read_uncommitted: %v, want %v", res.ReadUncommitted, all)
	}
}
