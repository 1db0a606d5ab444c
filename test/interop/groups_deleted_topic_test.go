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
	setUpDeletedTopicOffsets(t, b.Addr(), adm)
	deleteTopic(t, adm, "doomed")
	checkDeletedTopicOffsets(t, adm, "after DeleteTopics")

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartWith(t, testProps(dir, groupProps))
	adm = newAdmin(t, b.Addr())
	checkDeletedTopicOffsets(t, adm, "after a restart")

	testkit.CreateTopic(t, adm, "doomed", 3, nil)
	checkDeletedTopicOffsets(t, adm, "after the topic was recreated")
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

// The tombstones are acknowledged writes like any other: a broker killed
// (-9) right after DeleteTopics answered does not bring the offsets back.
func TestGroupOffsetsOfDeletedTopicStayGoneAfterKill9(t *testing.T) {
	b := newKbroker(t)
	b.Props = map[string]string{"group.initial.rebalance.delay.ms": "0"}
	p := b.Start(t)
	adm := newAdmin(t, p.Addr)
	setUpDeletedTopicOffsets(t, p.Addr, adm)
	deleteTopic(t, adm, "doomed")
	p.Kill9(t)
	p = b.Start(t)
	checkDeletedTopicOffsets(t, newAdmin(t, p.Addr), "after kill -9 and a restart")
}

// setUpDeletedTopicOffsets creates topics doomed and kept, and commits
// offsets 5 and 6 of partitions 0 and 1: group both for both topics, group
// only-doomed for doomed alone.
func setUpDeletedTopicOffsets(t *testing.T, addr string, adm *kadm.Client) {
	t.Helper()
	testkit.CreateTopic(t, adm, "doomed", 3, nil)
	testkit.CreateTopic(t, adm, "kept", 2, nil)
	produceN(t, addr, "doomed", 0, 30)
	produceN(t, addr, "kept", 0, 20)
	commit := func(group string, topics ...string) {
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
	commit("both", "doomed", "kept")
	commit("only-doomed", "doomed")
	if got := groupOffsets(t, adm, "both"); len(got["doomed"]) != 2 || len(got["kept"]) != 2 {
		t.Fatalf("before the deletion, group both has %v, want 2 partitions of each topic", got)
	}
}

func deleteTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	deleted, err := adm.DeleteTopics(testkit.Context(t, 10*time.Second), topic)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
}

// groupOffsets lists what an all-topics OffsetFetch returns, by topic.
func groupOffsets(t *testing.T, adm *kadm.Client, group string) map[string]map[int32]int64 {
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

// checkDeletedTopicOffsets checks the state setUpDeletedTopicOffsets
// leaves once doomed is deleted.
func checkDeletedTopicOffsets(t *testing.T, adm *kadm.Client, when string) {
	t.Helper()
	got := groupOffsets(t, adm, "both")
	if len(got["doomed"]) != 0 {
		t.Errorf("%s: group both still has offsets of the deleted topic: %v", when, got["doomed"])
	}
	if len(got["kept"]) != 2 || got["kept"][0] != 5 || got["kept"][1] != 6 {
		t.Errorf("%s: group both has %v for topic kept, want {0:5 1:6}", when, got["kept"])
	}
	if got := groupOffsets(t, adm, "only-doomed"); len(got) != 0 {
		t.Errorf("%s: group only-doomed still has offsets %v", when, got)
	}
	listed, err := adm.ListGroups(testkit.Context(t, 10*time.Second))
	if err != nil {
		t.Fatalf("%s: list groups: %v", when, err)
	}
	groups := map[string]bool{}
	for _, g := range listed.Groups() {
		groups[g] = true
	}
	if groups["only-doomed"] || !groups["both"] {
		t.Errorf("%s: groups listed %v, want both and not only-doomed (left with nothing)", when, groups)
	}
}
