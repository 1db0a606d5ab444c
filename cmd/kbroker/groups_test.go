package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/config"
)

// groupBroker is a broker whose groups rebalance without delay, with
// topic t of two partitions.
func groupBroker(t *testing.T) []string {
	t.Helper()
	bs := startBroker(t, config.Properties{"group.initial.rebalance.delay.ms": "0"})
	ok(t, args(bs, "topics", "--create", "--topic", "t", "--partitions", "2")...)
	return bs
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceAt writes n records to partition p of t, the i-th stamped
// base+i hours.
func produceAt(t *testing.T, bs []string, p int32, n int, base time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[1]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Hour)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consumer is a member of a group consuming t.
type consumer struct {
	cl *kgo.Client
	// first is the offset of the first record it got from each partition.
	first map[int32]int64
}

// joinAndConsume starts a group member of group g that reads n records of
// t and commits them; the member stays in the group until leave.
func joinAndConsume(t *testing.T, bs []string, group string, n int, opts ...kgo.Opt) *consumer {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bs[1]), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond), kgo.ClientID("groups-test"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{cl: cl, first: map[int32]int64{}}
	t.Cleanup(cl.Close)
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollRecords(ctx, n-len(got))
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := c.first[r.Partition]; !ok {
				c.first[r.Partition] = r.Offset
			}
			got = append(got, r)
		})
	}
	if err := cl.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *consumer) leave() { c.cl.Close() }

// committed reads the group's offsets through --describe --format json.
func committed(t *testing.T, bs []string, group string) map[string]any {
	t.Helper()
	var ds []describedGroup
	if err := json.Unmarshal([]byte(ok(t, args(bs, "groups", "--describe", "--group", group, "--format", "json")...)), &ds); err != nil || len(ds) != 1 {
		t.Fatalf("describe json: %v %v", ds, err)
	}
	out := map[string]any{}
	for _, o := range ds[0].Offsets {
		key := fmt.Sprintf("%s-%d", o.Topic, o.Partition)
		if o.CurrentOffset == nil {
			out[key] = nil
		} else {
			out[key] = *o.CurrentOffset
		}
	}
	return out
}

func wantCommitted(t *testing.T, bs []string, group string, want map[string]any) {
	t.Helper()
	got := committed(t, bs, group)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed offsets of %s: %v, want %v", group, got, want)
	}
}

func TestGroupsListAndDescribeAnActiveGroup(t *testing.T) {
	bs := groupBroker(t)
	base := time.Now().Add(-24 * time.Hour)
	produceAt(t, bs, 0, 5, base)
	produceAt(t, bs, 1, 5, base)
	c := joinAndConsume(t, bs, "g", 10)
	produceAt(t, bs, 0, 3, base) // 3 records of lag on t-0

	wantOutput(t, ok(t, args(bs, "groups", "--list")...), "g\n")
	wantOutput(t, ok(t, args(bs, "groups", "--list", "--state")...),
		fmt.Sprintf("%-25s %-20s\n%-25s %-20s\n", "GROUP", "STATE", "g", "Stable"))
	wantOutput(t, ok(t, args(bs, "groups", "--list", "--type", "--state", "Empty")...), fmt.Sprintf("%-25s %-20s %-20s\n", "GROUP", "TYPE", "STATE"))
	wantOutput(t, ok(t, args(bs, "groups", "--list", "--type", "classic", "--state=stable")...),
		fmt.Sprintf("%-25s %-20s %-20s\n%-25s %-20s %-20s\n", "GROUP", "TYPE", "STATE", "g", "Classic", "Stable"))

	out := ok(t, args(bs, "groups", "--describe", "--group", "g")...)
	lines := strings.Split(out, "\n")
	if len(lines) != 5 || lines[0] != "" || lines[4] != "" {
		t.Fatalf("describe:\n%q", out)
	}
	if f := strings.Fields(lines[1]); !slices.Equal(f, []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}) {
		t.Fatalf("header %q", lines[1])
	}
	for i, want := range [][]string{{"g", "t", "0", "5", "8", "3"}, {"g", "t", "1", "5", "5", "0"}} {
		f := strings.Fields(lines[2+i])
		if len(f) != 9 || !slices.Equal(f[:6], want) || !strings.HasPrefix(f[6], "groups-test-") || f[8] != "groups-test" {
			t.Fatalf("row %d: %q, want %v then the member", i, lines[2+i], want)
		}
	}

	members := ok(t, args(bs, "groups", "--describe", "--group", "g", "--members", "--verbose")...)
	ml := strings.Split(members, "\n")
	if len(ml) != 4 || !slices.Equal(strings.Fields(ml[1]), []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"}) {
		t.Fatalf("members:\n%s", members)
	}
	if f := strings.Fields(ml[2]); len(f) != 9 || f[4] != "2" || f[6] != "t:0,1" || f[3] != "groups-test" {
		t.Fatalf("member row %q", ml[2])
	}

	state := ok(t, args(bs, "groups", "--describe", "--group", "g", "--state")...)
	sl := strings.Split(state, "\n")
	if f := strings.Fields(sl[2]); len(sl) != 4 || len(f) != 6 || f[0] != "g" || f[2] != "(1)" || f[3] != "cooperative-sticky" || f[4] != "Stable" || f[5] != "1" {
		t.Fatalf("state:\n%s", state)
	}

	// Kafka changes nothing of a group with members.
	r := kb(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Error: Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.") {
		t.Fatalf("reset of an active group: %+v", r)
	}
	r = kb(t, args(bs, "groups", "--delete", "--group", "g")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Error: Deletion of some consumer groups failed:") ||
		!strings.Contains(r.stdout, "* Group 'g' could not be deleted due to: NON_EMPTY_GROUP") {
		t.Fatalf("delete of an active group: %+v", r)
	}
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(5), "t-1": int64(5)})

	c.leave()
	r = kb(t, args(bs, "groups", "--describe", "--group", "g")...)
	if r.code != 0 || !strings.Contains(r.stderr, "Consumer group 'g' has no active members.") {
		t.Fatalf("describe of the emptied group: %+v", r)
	}
	if f := strings.Fields(strings.Split(r.stdout, "\n")[2]); !slices.Equal(f, []string{"g", "t", "0", "5", "8", "3", "-", "-", "-"}) {
		t.Fatalf("row without a member: %v", f)
	}
	r = kb(t, args(bs, "groups", "--describe", "--group", "nope")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Error: Consumer group 'nope' does not exist.") {
		t.Fatalf("describe of an unknown group: %+v", r)
	}
}

func TestGroupsResetOffsetsEachWay(t *testing.T) {
	bs := groupBroker(t)
	base := time.Now().Add(-10 * time.Hour).Truncate(time.Second)
	produceAt(t, bs, 0, 8, base) // stamped base, base+1h, … base+7h
	produceAt(t, bs, 1, 4, base)
	joinAndConsume(t, bs, "g", 12).leave()
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(8), "t-1": int64(4)})

	reset := func(more ...string) result {
		return kb(t, args(bs, append([]string{"groups", "--reset-offsets", "--group", "g"}, more...)...)...)
	}
	// Without --execute nothing changes: the plan is printed, with Kafka's warning.
	r := reset("--all-topics", "--to-earliest")
	wantOutput(t, r.stdout, fmt.Sprintf("\n%-15s %-15s %-10s %s\n%-15s %-15s %-10s %s\n%-15s %-15s %-10s %s\n",
		"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "g", "t", "0", "0", "g", "t", "1", "0"))
	if r.code != 0 || !strings.HasPrefix(r.stderr, "WARN: No action will be performed as the --execute option is missing.") {
		t.Fatalf("reset without --execute: %+v", r)
	}
	if r := reset("--all-topics", "--to-earliest", "--dry-run"); r.code != 0 || r.stderr != "" {
		t.Fatalf("--dry-run: %+v", r)
	}
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(8), "t-1": int64(4)})

	for _, c := range []struct {
		how  []string
		want map[string]any
	}{
		{[]string{"--all-topics", "--to-earliest"}, map[string]any{"t-0": int64(0), "t-1": int64(0)}},
		{[]string{"--topic", "t:0", "--to-latest"}, map[string]any{"t-0": int64(8), "t-1": int64(0)}},
		{[]string{"--topic", "t", "--to-offset", "3"}, map[string]any{"t-0": int64(3), "t-1": int64(3)}},
		{[]string{"--topic", "t:1", "--to-offset", "99"}, map[string]any{"t-0": int64(3), "t-1": int64(4)}}, // clamped to the end
		{[]string{"--all-topics", "--shift-by", "-2"}, map[string]any{"t-0": int64(1), "t-1": int64(2)}},
		{[]string{"--all-topics", "--shift-by", "-5"}, map[string]any{"t-0": int64(0), "t-1": int64(0)}}, // clamped to the start
		{[]string{"--all-topics", "--to-datetime", base.Add(150 * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")},
			map[string]any{"t-0": int64(3), "t-1": int64(3)}},
		{[]string{"--all-topics", "--to-datetime", base.Add(150 * time.Minute).Local().Format("2006-01-02T15:04:05.000")},
			map[string]any{"t-0": int64(3), "t-1": int64(3)}},
		// 4.5 hours ago is after base+5h on t-0; t-1 has nothing that late: its end.
		{[]string{"--all-topics", "--by-duration", "PT4H30M"}, map[string]any{"t-0": int64(6), "t-1": int64(4)}},
		{[]string{"--all-topics", "--to-current"}, map[string]any{"t-0": int64(6), "t-1": int64(4)}},
	} {
		if r := reset(append(c.how, "--execute")...); r.code != 0 {
			t.Fatalf("%v: %+v", c.how, r)
		}
		wantCommitted(t, bs, "g", c.want)
	}

	// A consumer restarted reads from the reset offsets.
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--topic", "t:0", "--topic", "t:1", "--to-offset", "2", "--execute")...)
	c := joinAndConsume(t, bs, "g", 8)
	if c.first[0] != 2 || c.first[1] != 2 {
		t.Fatalf("restarted consumer began at %v, want 2 on each partition", c.first)
	}
	c.leave()

	// Errors as Kafka words them.
	if r := kb(t, args(bs, "groups", "--reset-offsets", "--group", "fresh", "--topic", "t:7", "--to-earliest")...); r.code != 1 ||
		!strings.Contains(r.stderr, `The partitions "t-7" do not exist`) {
		t.Fatalf("unknown partition: %+v", r)
	}
	if r := kb(t, args(bs, "groups", "--reset-offsets", "--group", "fresh", "--topic", "t", "--shift-by", "1")...); r.code != 1 ||
		!strings.Contains(r.stderr, "Cannot shift offset for partition t-0 since there is no current committed offset") {
		t.Fatalf("shift without commits: %+v", r)
	}
	// A group that does not exist yet may be given offsets.
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "fresh", "--topic", "t", "--to-latest", "--execute")...)
	wantCommitted(t, bs, "fresh", map[string]any{"t-0": int64(8), "t-1": int64(4)})
}

func TestGroupsExportAndFromFileRoundTrip(t *testing.T) {
	bs := groupBroker(t)
	produceAt(t, bs, 0, 6, time.Now().Add(-24*time.Hour))
	produceAt(t, bs, 1, 6, time.Now().Add(-24*time.Hour))
	joinAndConsume(t, bs, "g", 12).leave()
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--topic", "t:0", "--to-offset", "2", "--execute")...)

	// --export prints Kafka's CSV, which --from-file takes back.
	csvOut := ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-current", "--export", "--dry-run")...)
	wantOutput(t, csvOut, "t,0,2\nt,1,6\n\n")
	file := filepath.Join(t.TempDir(), "g.csv")
	os.WriteFile(file, []byte(csvOut), 0o600)
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute")...)
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--from-file", file, "--execute")...)
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(2), "t-1": int64(6)})

	// With several groups the CSV names the group first.
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "h", "--topic", "t:1", "--to-offset", "1", "--execute")...)
	multi := ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--group", "h", "--all-topics", "--to-current", "--export", "--dry-run")...)
	wantOutput(t, multi, "g,t,0,2\ng,t,1,6\nh,t,1,1\n\n")

	// JSON of --describe round-trips through --from-file.
	before := ok(t, args(bs, "groups", "--describe", "--group", "g", "--format", "json")...)
	jsonFile := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(jsonFile, []byte(before), 0o600)
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--execute")...)
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(6), "t-1": int64(6)})
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--from-file", jsonFile, "--execute")...)
	if after := ok(t, args(bs, "groups", "--describe", "--group", "g", "--format", "json")...); after != before {
		t.Fatalf("after the round trip:\n%s\nwant\n%s", after, before)
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(ok(t, args(bs, "groups", "--list", "--format", "json")...)), &listed); err != nil ||
		len(listed) != 2 || listed[0]["group"] != "g" || listed[0]["state"] != "Empty" {
		t.Fatalf("list json: %v %v", listed, err)
	}
	var all []describedGroup
	if err := json.Unmarshal([]byte(ok(t, args(bs, "groups", "--describe", "--all-groups", "--format", "json")...)), &all); err != nil ||
		len(all) != 2 || all[1].Group != "h" || len(all[1].Offsets) != 1 || *all[1].Offsets[0].CurrentOffset != 1 {
		t.Fatalf("describe --all-groups json: %+v %v", all, err)
	}
}

// A static member (KIP-345) shows its group.instance.id in its own column.
func TestGroupsDescribeStaticMember(t *testing.T) {
	bs := groupBroker(t)
	produceAt(t, bs, 1, 1, time.Now().Add(-time.Hour))
	joinAndConsume(t, bs, "static", 1, kgo.InstanceID("worker-1"))
	lines := strings.Split(ok(t, args(bs, "groups", "--describe", "--group", "static", "--members")...), "\n")
	if len(lines) != 4 || !slices.Equal(strings.Fields(lines[1]), []string{"GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}) {
		t.Fatalf("members:\n%s", strings.Join(lines, "\n"))
	}
	if f := strings.Fields(lines[2]); len(f) != 6 || f[0] != "static" || f[2] != "worker-1" || f[5] != "2" {
		t.Fatalf("member row %q", lines[2])
	}
}

func TestGroupsDeleteAndDeleteOffsets(t *testing.T) {
	bs := groupBroker(t)
	ok(t, args(bs, "topics", "--create", "--topic", "u")...)
	produceAt(t, bs, 0, 2, time.Now().Add(-24*time.Hour))
	joinAndConsume(t, bs, "g", 2).leave()
	ok(t, args(bs, "groups", "--reset-offsets", "--group", "g", "--topic", "t", "--topic", "u", "--to-latest", "--execute")...)
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(2), "t-1": int64(0), "u-0": int64(0)})

	wantOutput(t, ok(t, args(bs, "groups", "--delete-offsets", "--group", "g", "--topic", "u")...),
		fmt.Sprintf("Request succeeded for deleting offsets from group g.\n\n%-15s %-10s %-15s\n%-15s %-10s %-15s\n", "TOPIC", "PARTITION", "STATUS", "u", "0", "Successful"))
	wantCommitted(t, bs, "g", map[string]any{"t-0": int64(2), "t-1": int64(0)})
	r := kb(t, args(bs, "groups", "--delete-offsets", "--group", "g", "--topic", "nope")...)
	if r.code != 1 || !strings.Contains(r.stderr, "Error: Encountered some partition-level error, see the follow-up details.") ||
		!strings.Contains(r.stdout, "nope            -          Error: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("delete-offsets of an unknown topic: %+v", r)
	}

	wantOutput(t, ok(t, args(bs, "groups", "--delete", "--group", "g")...), "Deletion of requested consumer groups ('g') was successful.\n")
	wantOutput(t, ok(t, args(bs, "groups", "--list")...), "")
	r = kb(t, args(bs, "groups", "--delete", "--group", "g")...)
	if r.code != 1 || !strings.Contains(r.stdout, "* Group 'g' could not be deleted due to: GROUP_ID_NOT_FOUND") {
		t.Fatalf("second delete: %+v", r)
	}
}

func TestGroupsUsageErrors(t *testing.T) {
	bs := []string{"--bootstrap-server", "127.0.0.1:1"}
	for _, c := range []struct {
		args    []string
		message string
	}{
		{[]string{}, "exactly one of --delete, --delete-offsets, --describe, --list, --reset-offsets is required"},
		{[]string{"--describe"}, "--describe needs --group or --all-groups"},
		{[]string{"--describe", "--group", "g", "--state", "Stable"}, "--describe does not take a value for --state"},
		{[]string{"--describe", "--group", "g", "--members", "--offsets"}, "only one of --members, --offsets, --state"},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics"}, "--reset-offsets needs exactly one of --to-earliest"},
		{[]string{"--reset-offsets", "--group", "g", "--to-earliest"}, "One of the reset scopes should be defined: --all-topics, --topic."},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"}, "only accepts one of --execute and --dry-run"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest"}, "Invalid partition 'x' specified in topic arg 't:x'"},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1h"}, "want an ISO-8601 duration"},
		{[]string{"--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2026-01-01"}, "It does not contain a 'T'"},
		{[]string{"--list", "--state", "Sleepy"}, "Invalid state list 'Sleepy'. Valid states are: PreparingRebalance"},
		{[]string{"--list", "--to-earliest"}, "--to-earliest goes with --reset-offsets only"},
		{[]string{"--delete-offsets", "--group", "g"}, "--delete-offsets needs one --group and at least one --topic"},
	} {
		r := kb(t, append([]string{"groups"}, append(bs, c.args...)...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.message) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.message)
		}
	}
	if r := kb(t, "groups", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Examples:\n  ") || !strings.Contains(r.stdout, "--reset-offsets") {
		t.Fatalf("--help: %+v", r)
	}
}
