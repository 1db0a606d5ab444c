package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/config"
)

// txnCLIBroker is a broker with a one-partition `__transaction_state`, a
// topic t, and a transaction of id etl open with two records on t-0.
func txnCLIBroker(t *testing.T) ([]string, *kgo.Client) {
	t.Helper()
	bs := startBroker(t, config.Properties{"transaction.state.log.num.partitions": "1"})
	ok(t, args(bs, "topics", "--create", "--topic", "t", "--partitions", "1")...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[1]), kgo.TransactionalID("etl"), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return bs, cl
}

// table splits kafka-transactions.sh output into rows of cells.
func table(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var row []string
		for _, cell := range strings.Split(strings.TrimSuffix(line, "\t"), "\t") {
			row = append(row, strings.TrimSpace(cell))
		}
		rows = append(rows, row)
	}
	return rows
}

func TestTransactionsCommandsPrintKafkasColumns(t *testing.T) {
	bs, cl := txnCLIBroker(t)

	out := ok(t, args(bs, "transactions", "list")...)
	if !regexp.MustCompile(`^TransactionalId\tCoordinator\tProducerId\tTransactionState\t\netl            \t1          \t\d+\s*\tOngoing         \t\n$`).MatchString(out) {
		t.Fatalf("list:\n%q", out)
	}
	pid := table(out)[1][2]
	for _, filter := range [][]string{{"--state", "CompleteCommit"}, {"--duration-filter", "3600000"}, {"--producer-id", "999"}, {"--transactional-id-pattern", "e"}} {
		if rows := table(ok(t, args(bs, append([]string{"transactions", "list"}, filter...)...)...)); len(rows) != 1 {
			t.Errorf("list %v: %v, want the header only", filter, rows)
		}
	}
	if rows := table(ok(t, args(bs, "transactions", "list", "--state", "Ongoing,Empty", "--producer-id", pid, "--duration-filter", "0")...)); len(rows) != 2 {
		t.Errorf("list with matching filters: %v, want etl", rows)
	}

	rows := table(ok(t, args(bs, "transactions", "describe", "--transactional-id", "etl")...))
	want := []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
		"CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"}
	if strings.Join(rows[0], ",") != strings.Join(want, ",") {
		t.Fatalf("describe header %v", rows[0])
	}
	if r := rows[1]; r[0] != "1" || r[1] != "etl" || r[2] != pid || r[4] != "Ongoing" || r[5] != "60000" || r[6] == "None" || r[8] != "t-0" {
		t.Fatalf("describe row %v", r)
	}

	rows = table(ok(t, args(bs, "transactions", "describe-producers", "--topic", "t", "--partition", "0")...))
	if strings.Join(rows[0], ",") != "ProducerId,ProducerEpoch,LatestCoordinatorEpoch,LastSequence,LastTimestamp,CurrentTransactionStartOffset" ||
		len(rows) != 2 || rows[1][0] != pid || rows[1][3] != "1" || rows[1][5] != "0" {
		t.Fatalf("describe-producers: %v", rows)
	}

	rows = table(ok(t, args(bs, "transactions", "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")...))
	if strings.Join(rows[0], ",") != "Topic,Partition,ProducerId,ProducerEpoch,CoordinatorEpoch,StartOffset,LastTimestamp,Duration(min)" || len(rows) != 1 {
		t.Fatalf("find-hanging: %v, want the header only (the coordinator has t-0 in etl's transaction)", rows)
	}

	var listed []map[string]any
	if err := json.Unmarshal([]byte(ok(t, args(bs, "transactions", "--format", "json", "list")...)), &listed); err != nil || len(listed) != 1 || listed[0]["state"] != "Ongoing" {
		t.Fatalf("list --format json: %v %v", listed, err)
	}

	r := kb(t, args(bs, "transactions", "abort", "--topic", "t", "--partition", "0", "--start-offset", "1")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Could not find any open transactions starting at offset 1 on partition t-0") {
		t.Fatalf("abort at offset 1: %+v", r)
	}
	ok(t, args(bs, "transactions", "abort", "--topic", "t", "--partition", "0", "--start-offset", "0")...)
	rows = table(ok(t, args(bs, "transactions", "describe-producers", "--topic", "t", "--partition", "0")...))
	if len(rows) != 2 || rows[1][5] != "None" {
		t.Fatalf("after abort: %v, want no open transaction", rows)
	}

	if err := cl.EndTransaction(testCtx(t), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

func TestTransactionsUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1"}, "a command is required"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "commit"}, `unknown command "commit"`},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "describe"}, "describe needs --transactional-id"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "list", "--topic", "t"}, "--topic does not go with list"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "find-hanging"}, "The `find-hanging` command requires either --topic or --broker-id"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "find-hanging", "--broker-id", "1", "--partition", "0"}, "The --partition argument requires --topic"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "abort", "--topic", "t", "--partition", "0"}, "must be identified either with --start-offset"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "abort", "--topic", "t", "--partition", "0", "--producer-id", "5"}, "Missing required argument --producer-epoch"},
		{[]string{"transactions", "--bootstrap-server", "127.0.0.1:1", "abort", "--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "0"}, "Missing required argument --coordinator-epoch"},
	} {
		r := kb(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
