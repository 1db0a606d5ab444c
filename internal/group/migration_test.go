package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscription is a ConsumerProtocol v3 subscription to topic, owning
// owned of it (cooperative members report what they still own).
func subscription(topic string, owned ...int32) string {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version = 3
	s.Topics = []string{topic}
	if len(owned) > 0 {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = topic, owned
		s.OwnedPartitions = append(s.OwnedPartitions, o)
	}
	return string(s.AppendTo(nil))
}

func assignmentBytes(topic string, ps ...int32) string {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = 3
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = topic, ps
	a.Topics = append(a.Topics, at)
	return string(a.AppendTo(nil))
}

func partitionsOf(t *testing.T, resp *kmsg.SyncGroupResponse) []int32 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(resp.MemberAssignment); err != nil {
		t.Fatalf("sync assignment: %v", err)
	}
	var out []int32
	for _, tp := range a.Topics {
		out = append(out, tp.Partitions...)
	}
	return out
}

// stableClassicMember makes a classic group of one member owning all four
// partitions of t; it returns the member id and generation.
func stableClassicMember(t *testing.T, h *consumerHarness) (string, int32) {
	t.Helper()
	id, ch := h.joinNew("g", withMetadata(subscription("t")))
	j := answered(t, ch)
	if j.ErrorCode != 0 || j.LeaderID != id {
		t.Fatalf("classic join: %v, leader %q", kerr.ErrorForCode(j.ErrorCode), j.LeaderID)
	}
	partitionsOf(t, answered(t, h.sync("g", id, j.Generation, map[string]string{id: assignmentBytes("t", 0, 1, 2, 3)})))
	return id, j.Generation
}

// The whole life of a migrating group, under policy bidirectional: a
// KIP-848 join upgrades a classic group whose member keeps its four
// partitions; the classic member is told to rejoin, revokes two (its
// generation follows its member epoch) and the KIP-848 member gets them;
// the mixed group survives a restart; the KIP-848 member's leave turns the
// group classic again, rebalancing, and that survives a restart too.
func TestMigrationUpgradeThenDowngrade(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 4)
	c, gen := stableClassicMember(t, h)

	n := ok(t, h.hb(joinHB("g", "n", "t")))
	if g := h.group("g"); g.consumer == nil || g.consumer.members[c] == nil || g.consumer.members[c].classic == nil {
		t.Fatal("the classic group was not upgraded with its member")
	}
	if got := countPartitions(assignedOf(n)); got != 0 {
		t.Fatalf("the KIP-848 member got %d partitions the classic member still owns", got)
	}
	if code := h.heartbeat("g", c, gen, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the upgrade: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	if code := h.heartbeat("g", c, gen+5, nil); code != kerr.IllegalGeneration.Code {
		t.Fatalf("classic heartbeat at a wrong generation: %v, want ILLEGAL_GENERATION", kerr.ErrorForCode(code))
	}

	// Rejoining while it still owns all four: it must give two up first.
	j := answered(t, h.join(joinReq("g", c, withMetadata(subscription("t", 0, 1, 2, 3)))))
	if j.ErrorCode != 0 || j.Generation != gen {
		t.Fatalf("classic rejoin: %v at generation %d, want its epoch %d", kerr.ErrorForCode(j.ErrorCode), j.Generation, gen)
	}
	kept := partitionsOf(t, answered(t, h.sync("g", c, j.Generation, nil)))
	if len(kept) != 2 {
		t.Fatalf("classic member keeps %v, want 2 partitions", kept)
	}
	if code := h.heartbeat("g", c, j.Generation, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat with partitions to revoke: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	j = answered(t, h.join(joinReq("g", c, withMetadata(subscription("t", kept...)))))
	if j.ErrorCode != 0 || j.Generation <= gen {
		t.Fatalf("classic rejoin after revoking: %v at generation %d", kerr.ErrorForCode(j.ErrorCode), j.Generation)
	}
	gen = j.Generation
	if got := partitionsOf(t, answered(t, h.sync("g", c, gen, nil))); len(got) != 2 {
		t.Fatalf("classic member assigned %v after revoking", got)
	}
	if code := h.heartbeat("g", c, gen, nil); code != 0 {
		t.Fatalf("classic heartbeat once reconciled: %v", kerr.ErrorForCode(code))
	}
	n = ok(t, h.hb(beat("g", "n", n.MemberEpoch, nil)))
	if got := countPartitions(assignedOf(n)); got != 2 {
		t.Fatalf("the KIP-848 member got %d partitions once released, want 2", got)
	}
	if code := h.commit(8, "g", c, gen, 10); code != 0 {
		t.Fatalf("classic member's commit at its epoch: %v", kerr.ErrorForCode(code))
	}

	h.restart(h.cfg)
	if code := h.heartbeat("g", c, gen, nil); code != 0 {
		t.Fatalf("classic heartbeat after a restart: %v (its ClassicMemberMetadata not replayed?)", kerr.ErrorForCode(code))
	}

	ok(t, h.hb(beat("g", "n", -1, nil)))
	g := h.group("g")
	if g.consumer != nil || g.members[c] == nil || g.state != PreparingRebalance {
		t.Fatalf("after the last KIP-848 member left: consumer %v, classic members %d, state %v; want a classic group rebalancing", g.consumer != nil, len(g.members), g.state)
	}
	if code := h.heartbeat("g", c, g.generation, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat in the downgraded group: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	j = answered(t, h.join(joinReq("g", c, withMetadata(subscription("t", kept...)))))
	if j.ErrorCode != 0 || j.LeaderID != c {
		t.Fatalf("rejoin of the downgraded group: %v, leader %q", kerr.ErrorForCode(j.ErrorCode), j.LeaderID)
	}
	partitionsOf(t, answered(t, h.sync("g", c, j.Generation, map[string]string{c: assignmentBytes("t", 0, 1, 2, 3)})))
	h.restart(h.cfg)
	if g := h.group("g"); g.consumer != nil || g.members[c] == nil || h.fetched("g") != 10 {
		t.Fatal("the downgraded group (or its offsets) did not survive a restart")
	}
}

// The policy decides which conversions of groups with members happen:
// "downgrade" and "disabled" refuse the upgrade with GROUP_ID_NOT_FOUND;
// "upgrade" keeps a consumer group of classic members once the last
// KIP-848 member has left.
func TestMigrationPolicy(t *testing.T) {
	for _, policy := range []string{"disabled", "downgrade"} {
		h := newConsumerHarness(t)
		h.cfg.Consumer.MigrationPolicy = policy
		h.restart(h.cfg)
		h.topic("t", 4)
		stableClassicMember(t, h)
		if r := h.hb(joinHB("g", "n", "t")); r.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("policy %s: KIP-848 join of a classic group with members: %v, want GROUP_ID_NOT_FOUND", policy, kerr.ErrorForCode(r.ErrorCode))
		}
		if h.group("g").consumer != nil {
			t.Fatalf("policy %s: upgraded", policy)
		}
	}
	h := newConsumerHarness(t)
	h.cfg.Consumer.MigrationPolicy = "upgrade"
	h.restart(h.cfg)
	h.topic("t", 4)
	c, _ := stableClassicMember(t, h)
	ok(t, h.hb(joinHB("g", "n", "t")))
	ok(t, h.hb(beat("g", "n", -1, nil)))
	if g := h.group("g"); g.consumer == nil || g.consumer.members[c] == nil {
		t.Fatal(`policy upgrade: the group was downgraded (or lost its classic member)`)
	}
}

// A classic member of a consumer group told to rejoin that keeps
// heartbeating without rejoining is fenced after its rebalance timeout, so
// the partitions it holds can move (Kafka's classic join timeout).
func TestMigrationClassicMemberThatNeverRejoinsIsFenced(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 4)
	c, gen := stableClassicMember(t, h)
	n := ok(t, h.hb(joinHB("g", "n", "t")))
	for i := 0; i < 13; i++ { // 65 s of heartbeats, past the 60 s rebalance timeout
		n = ok(t, h.hb(beat("g", "n", n.MemberEpoch, nil)))
		code := h.heartbeat("g", c, gen, nil)
		if code == kerr.UnknownMemberID.Code {
			return // fenced
		}
		if code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat %d: %v, want REBALANCE_IN_PROGRESS", i, kerr.ErrorForCode(code))
		}
		h.advance(5 * time.Second)
	}
	t.Fatal("a classic member that never rejoined was not fenced after its rebalance timeout")
}
