package interop

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// Deleting a topic removes its committed offsets from every group, as
// Kafka's coordinator does: OffsetFetch shows none right after DeleteTopics
// answers, none after a restart (tombstones were written to
// __consumer_offsets, not just dropped from memory), and a topic recreated
// under the same name starts with no commits. A group whose only offsets
// were the deleted topic's is gone; a group with other offsets keeps them.
func TestGroupOffsetsOfDeletedTopicAreRemoved(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartWith(t, testProps(dir, groupProps))
	adm := newAdmin(t, b.Addr())
	testkit.CreateTopic(t, adm, "doomed", 3, nil)
	testkit.CreateTopic(t, adm, "kept", 2, nil)
	produceN(t, b.Addr(), "doomed", 0, 30)
	produceN(t, b.Addr(), "kept", 0, 20)

	commit := func(adm *kadm.Client, group string, topics ...string) {
		t.Helper()
		os := kadm.Offsets{}
		for _, topic := range topics {
			for p := int32(0); p < 2; p++ {
				os.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(5 + p), LeaderEpoch: -1})
			}
		}
		resp, err := adm.CommitOffsets(testkit.Context(t, 10*time.Second), group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %s %v: %v", group, topics, err)
		}
	}
	commit(adm, "both", "doomed", "kept")
	commit(adm, "only-doomed", "doomed")

	// offsets lists what an all-topics OffsetFetch returns, by topic.
	offsets := func(adm *kadm.Client, group string) map[string]map[int32]int64 {
		t.Helper()
		resp, err := adm.FetchOffsets(testkit.Context(t, 10*time.Second), group)
		if err != nil {
			t.Fatalf("fetch offsets of %s: %v", group, err)
		}
		out := map[string]map[int32]int64{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil {
				t.Fatalf("fetch offsets of %s: %s[%d]: %v", group, o.Topic, o.Partition, o.Err)
			}
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		})
		return out
	}
	if got := offsets(adm, "both"); len(got["doomed"]) != 2 || len(got["kept"]) != 2 {
		t.Fatalf("before the deletion, group both has %v, want 2 partitions of each topic", got)
	}
	groups := func(adm *kadm.Client) map[string]bool {
		t.Helper()
		listed, err := adm.ListGroups(testkit.Context(t, 10*time.Second))
		if err != nil {
			t.Fatalf("list groups: %v", err)
		}
		out := map[string]bool{}
		for _, g := range listed.Groups() {
			out[g] = true
		}
		return out
	}

	deleted, err := adm.DeleteTopics(testkit.Context(t, 10*time.Second), "doomed")
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	check := func(adm *kadm.Client, when string) {
		t.Helper()
		got := offsets(adm, "both")
		if len(got["doomed"]) != 0 {
			t.Errorf("%s: group both still has offsets of the deleted topic: %v", when, got["doomed"])
		}
		if len(got["kept"]) != 2 || got["kept"][0] != 5 || got["kept"][1] != 6 {
			t.Errorf("%s: group both has %v for topic kept, want {0:5 1:6}", when, got["kept"])
		}
		if got := offsets(adm, "only-doomed"); len(got) != 0 {
			t.Errorf("%s: group only-doomed still has offsets %v", when, got)
		}
		if gs := groups(adm); gs["only-doomed"] || !gs["both"] {
			t.Errorf("%s: groups listed %v, want both and not only-doomed (left with nothing)", when, gs)
		}
	}
	check(adm, "after DeleteTopics")

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartWith(t, testProps(dir, groupProps))
	adm = newAdmin(t, b.Addr())
	check(adm, "after a restart")

	testkit.CreateTopic(t, adm, "doomed", 3, nil)
	check(adm, "after the topic was recreated")
	resp, err := adm.FetchOffsetsForTopics(testkit.Context(t, 10*time.Second), "both", "doomed")
	if err != nil {
		t.Fatalf("fetch offsets of the recreated topic: %v", err)
	}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == "doomed" && o.At != -1 {
			t.Errorf("recreated topic doomed[%d] has committed offset %d, want none (-1)", o.Partition, o.At)
		}
	})
}
