package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPartitionIsKafkasPlacement(t *testing.T) {
	// abs(String.hashCode()) % 50 as a Kafka 4 broker computes it.
	for group, want := range map[string]int32{"": 0, "g1": 42, "my-group": 12, "console-consumer-1": 24, "é": 33} {
		if got := Partition(group, 50); got != want {
			t.Errorf("Partition(%q) = %d, want %d", group, got, want)
		}
	}
}

func TestJoinAsksForMemberIDFromV4(t *testing.T) {
	h := newHarness(t, testConfig())
	first := answered(t, h.join(joinReq("g", "")))
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		t.Fatalf("v9 join without id: error %d id %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	if g := h.group("g"); len(g.members) != 0 || len(g.pending) != 1 {
		t.Fatalf("after MEMBER_ID_REQUIRED: %d members, %d pending; want 0 and 1", len(g.members), len(g.pending))
	}
	// A v3 client is made a member at once.
	old := answered(t, h.join(joinReq("g3", "", withVersion(3))))
	if old.ErrorCode != 0 || old.Generation != 1 || old.LeaderID != old.MemberID {
		t.Fatalf("v3 join: %+v, want generation 1 led by itself", old)
	}
	// A member id the group never handed out is refused.
	if r := answered(t, h.join(joinReq("g", "nobody"))); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member id: error %d", r.ErrorCode)
	}
	// The pending id expires after the session timeout.
	h.advance(11 * time.Second)
	if g := h.group("g"); len(g.pending) != 0 {
		t.Fatal("pending member id did not expire")
	}
}

func TestRebalanceWithTwoMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	a, aJoin := h.joinNew("g")
	ra := answered(t, aJoin) // alone: the join completes at once
	if ra.Generation != 1 || ra.LeaderID != a || len(ra.Members) != 1 || *ra.Protocol != "range" {
		t.Fatalf("first generation: %+v", ra)
	}
	if s := answered(t, h.sync("g", a, 1, map[string]string{a: "A1"})); s.ErrorCode != 0 || string(s.MemberAssignment) != "A1" {
		t.Fatalf("leader sync: %+v", s)
	}
	if st := h.group("g").state; st != Stable {
		t.Fatalf("state %v after sync, want Stable", st)
	}

	// A second member joins: it waits for the first to rejoin, which
	// learns of the rebalance from its heartbeat.
	b, bJoin := h.joinNew("g")
	parked(t, bJoin)
	if code := h.heartbeat("g", a, 1, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %d, want REBALANCE_IN_PROGRESS", code)
	}
	// The old generation may still commit while members revoke.
	if code := h.commit(9, "g", a, 1, 10); code != 0 {
		t.Fatalf("commit during PreparingRebalance: %d, want accepted", code)
	}
	aRejoin := h.join(joinReq("g", a))
	ra, rb := answered(t, aRejoin), answered(t, bJoin)
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("second generation: leader %+v follower %+v", ra, rb)
	}
	// Commits wait for the assignment: REBALANCE_IN_PROGRESS until synced.
	if code := h.commit(9, "g", a, 2, 11); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit during CompletingRebalance: %d", code)
	}
	bSync := h.sync("g", b, 2, nil)
	parked(t, bSync)
	aSync := h.sync("g", a, 2, map[string]string{a: "A2", b: "B2"})
	if s := answered(t, bSync); string(s.MemberAssignment) != "B2" {
		t.Fatalf("follower got %q", s.MemberAssignment)
	}
	if s := answered(t, aSync); string(s.MemberAssignment) != "A2" {
		t.Fatalf("leader got %q", s.MemberAssignment)
	}
	if code := h.commit(9, "g", b, 1, 12); code != kerr.IllegalGeneration.Code {
		t.Fatalf("commit of an old generation: %d, want ILLEGAL_GENERATION", code)
	}
}

func TestInitialRebalanceDelayWaitsForMoreMembers(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 3 * time.Second
	h := newHarness(t, cfg)
	_, aJoin := h.joinNew("g")
	h.advance(2 * time.Second)
	parked(t, aJoin)
	_, bJoin := h.joinNew("g") // re-arms the delay
	h.advance(1500 * time.Millisecond)
	parked(t, aJoin)
	h.advance(3 * time.Second)
	ra, rb := answered(t, aJoin), answered(t, bJoin)
	if ra.Generation != 1 || rb.Generation != 1 || len(ra.Members)+len(rb.Members) != 2 {
		t.Fatalf("one generation with both members expected: %+v / %+v", ra, rb)
	}
}

// With group.initial.rebalance.delay.ms=0 the first rebalance of an empty
// group completes on a zero-delay timer with the members that have joined,
// as Kafka's does (prepareRebalance never completes an initial rebalance
// inline): a member still owing its rejoin after MEMBER_ID_REQUIRED is not
// waited for, and starts the next rebalance when it joins.
func TestInitialRebalanceWithoutDelayDoesNotWaitForPendingMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	pending := answered(t, h.join(joinReq("g", "")))
	if pending.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", pending.ErrorCode)
	}
	a, aJoin := h.joinNew("g")
	ra := answered(t, aJoin)
	if ra.Generation != 1 || ra.LeaderID != a || len(ra.Members) != 1 {
		t.Fatalf("first generation: generation %d, leader %q, %d members; want 1, %q, 1", ra.Generation, ra.LeaderID, len(ra.Members), a)
	}
	bJoin := h.join(joinReq("g", pending.MemberID))
	parked(t, bJoin) // a rebalance that waits for a to rejoin
	if s := answered(t, h.sync("g", a, 1, map[string]string{a: "all"})); s.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("a's sync of generation 1: error %d, want REBALANCE_IN_PROGRESS", s.ErrorCode)
	}
	ra = answered(t, h.join(joinReq("g", a)))
	rb := answered(t, bJoin)
	if ra.Generation != 2 || rb.Generation != 2 || len(ra.Members) != 2 {
		t.Fatalf("second generation: %d and %d, leader got %d members; want 2, 2, 2", ra.Generation, rb.Generation, len(ra.Members))
	}
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.stableTwoMembers("g")

	// a keeps heartbeating; b goes silent past its 10 s session.
	for i := 0; i < 4; i++ {
		h.advance(3 * time.Second)
		if code := h.heartbeat("g", a, 2, nil); code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat: %d", code)
		}
	}
	g := h.group("g")
	if g.members[b] != nil {
		t.Fatal("silent member still in the group")
	}
	if g.state != PreparingRebalance {
		t.Fatalf("state %v, want PreparingRebalance after a member expired", g.state)
	}
	if code := h.heartbeat("g", b, 2, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member's heartbeat: %d, want UNKNOWN_MEMBER_ID", code)
	}
	r := answered(t, h.join(joinReq("g", a)))
	if r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("after expiry: %+v", r)
	}
}

func TestStaticMemberRejoinFencesOldIncarnation(t *testing.T) {
	h := newHarness(t, testConfig())
	first := answered(t, h.join(joinReq("g", "", withInstance("i1"))))
	if first.ErrorCode != 0 || first.Generation != 1 {
		t.Fatalf("static join: %+v (static members get no MEMBER_ID_REQUIRED)", first)
	}
	old := first.MemberID
	answered(t, h.sync("g", old, 1, map[string]string{old: "x"}))

	// The process restarts: same instance id, no member id.
	again := answered(t, h.join(joinReq("g", "", withInstance("i1"))))
	if again.ErrorCode != 0 || again.Generation != 1 || again.MemberID == old || !again.SkipAssignment {
		t.Fatalf("static rejoin: %+v, want the same generation, a new id, SkipAssignment for the leader", again)
	}
	inst := "i1"
	if code := h.heartbeat("g", old, 1, &inst); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old incarnation heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}
	if code := h.heartbeat("g", again.MemberID, 1, &inst); code != 0 {
		t.Fatalf("new incarnation heartbeat: %d", code)
	}
	// A static member that stops without leaving keeps its slot through a
	// rebalance.
	_, otherJoin := h.joinNew("g")
	for i := 0; i < 6; i++ { // i1 stays alive but never rejoins
		h.advance(9 * time.Second)
		if code := h.heartbeat("g", again.MemberID, 1, &inst); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("static member heartbeat during the rebalance: %d", code)
		}
	}
	h.advance(7 * time.Second) // the rebalance timeout (60 s) passes
	r := answered(t, otherJoin)
	if g := h.group("g"); g.members[again.MemberID] == nil || r.Generation != 2 {
		t.Fatalf("static member dropped at join completion (or no new generation): %+v", r)
	}
}

func TestCooperativeFollowerRejoinsAtOnce(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.stableTwoMembers("g")

	// An unchanged follower's rejoin in Stable is answered at once...
	if r := answered(t, h.join(joinReq("g", b))); r.Generation != 2 || r.ErrorCode != 0 {
		t.Fatalf("unchanged follower rejoin: %+v", r)
	}
	// ...one whose owned partitions changed (it revoked) rebalances.
	bAgain := h.join(joinReq("g", b, withMetadata("owned:none")))
	parked(t, bAgain)
	if code := h.heartbeat("g", a, 2, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("leader heartbeat: %d", code)
	}
	answered(t, h.join(joinReq("g", a)))
	if r := answered(t, bAgain); r.Generation != 3 {
		t.Fatalf("second cooperative rebalance: %+v", r)
	}
}

func TestLeaveGroupRebalancesTheRest(t *testing.T) {
	h := newHarness(t, testConfig())
	a, aJoin := h.joinNew("g")
	answered(t, aJoin)
	answered(t, h.sync("g", a, 1, map[string]string{a: "x"}))
	var codes []int16
	h.do(func(s *shard) {
		for _, m := range s.leave("g", leaveMembers(a, "ghost")) {
			codes = append(codes, m.ErrorCode)
		}
	})
	if codes[0] != 0 || codes[1] != kerr.UnknownMemberID.Code {
		t.Fatalf("leave codes %v, want [0 UNKNOWN_MEMBER_ID]", codes)
	}
	if g := h.group("g"); g.state != Empty || g.generation != 2 {
		t.Fatalf("after the last member left: %v generation %d, want Empty generation 2", g.state, g.generation)
	}
}

func TestOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, testConfig())
	a, aJoin := h.joinNew("active")
	answered(t, aJoin)
	answered(t, h.sync("active", a, 1, map[string]string{a: "x"}))
	for _, tc := range []struct {
		name    string
		version int16
		group   string
		member  string
		gen     int32
		want    *kerr.Error
	}{
		{"simple commit creates the group", 8, "simple", "", -1, nil},
		{"simple commit into an empty group", 8, "simple", "", -1, nil},
		{"generation for a missing group, v8", 8, "missing", "m", 3, kerr.IllegalGeneration},
		{"generation for a missing group, v9", 9, "missing", "m", 3, kerr.GroupIDNotFound},
		{"simple commit into an active group", 8, "active", "", -1, kerr.UnknownMemberID},
		{"unknown member", 8, "active", "who", 1, kerr.UnknownMemberID},
		{"wrong generation", 8, "active", a, 7, kerr.IllegalGeneration},
		{"member of the current generation", 8, "active", a, 1, nil},
	} {
		code := h.commit(tc.version, tc.group, tc.member, tc.gen, 42)
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		if code != want {
			t.Errorf("%s: error %d, want %d", tc.name, code, want)
		}
	}
	if h.fetched("missing") != -1 {
		t.Error("a refused commit created offsets")
	}
	if h.fetched("simple") != 42 || h.fetched("active") != 42 {
		t.Error("accepted commits not fetched back")
	}
}

func TestOffsetsAndGroupsSurviveRestart(t *testing.T) {
	h := newHarness(t, testConfig())
	a, aJoin := h.joinNew("g")
	answered(t, aJoin)
	answered(t, h.sync("g", a, 1, map[string]string{a: "assigned"}))
	if code := h.commit(9, "g", a, 1, 77); code != 0 {
		t.Fatal(code)
	}
	if code := h.commit(9, "deleted", "", -1, 5); code != 0 {
		t.Fatal(code)
	}
	if code := h.c.Delete(t.Context(), "deleted"); code != 0 {
		t.Fatalf("delete empty group: %d", code)
	}
	if code := h.c.Delete(t.Context(), "g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete active group: %d, want NON_EMPTY_GROUP", code)
	}

	h.restart(testConfig())
	if got := h.fetched("g"); got != 77 {
		t.Fatalf("offset after restart: %d, want 77", got)
	}
	if got := h.fetched("deleted"); got != -1 {
		t.Fatalf("deleted group's offset came back: %d", got)
	}
	g := h.group("g")
	if g.state != Stable || g.generation != 1 || g.leader != a || string(g.members[a].assignment) != "assigned" {
		t.Fatalf("group after restart: %v gen %d leader %q", g.state, g.generation, g.leader)
	}
	// The member carries on after the failover, and its session still
	// runs out if it does not.
	if code := h.heartbeat("g", a, 1, nil); code != 0 {
		t.Fatalf("heartbeat after restart: %d", code)
	}
	h.advance(11 * time.Second)
	if g := h.group("g"); g.members[a] != nil {
		t.Fatal("member replayed from the log never expired")
	}
}

func TestOffsetRetention(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention, cfg.RetentionCheck = 10*time.Minute, time.Minute
	h := newHarness(t, cfg)
	if code := h.commit(9, "simple", "", -1, 5); code != 0 {
		t.Fatal(code)
	}
	a, aJoin := h.joinNew("active")
	answered(t, aJoin)
	answered(t, h.sync("active", a, 1, map[string]string{a: "x"}))
	if code := h.commit(9, "active", a, 1, 9); code != 0 {
		t.Fatal(code)
	}
	alive := func(d time.Duration) { // the member heartbeats within its session
		for ; d > 0; d -= 5 * time.Second {
			h.advance(5 * time.Second)
			if code := h.heartbeat("active", a, 1, nil); code != 0 {
				t.Fatalf("heartbeat: %d", code)
			}
		}
	}
	alive(9 * time.Minute)
	if h.fetched("simple") != 5 {
		t.Fatal("offset expired before offsets.retention.minutes")
	}
	alive(3 * time.Minute)
	if h.fetched("simple") != -1 || h.group("simple") != nil {
		t.Fatal("a simple group's offset outlived its retention (or the emptied group stayed)")
	}
	if h.fetched("active") != 9 {
		t.Fatal("an active group lost the offset of a topic it may consume")
	}
	h.restart(cfg)
	if h.fetched("simple") != -1 {
		t.Fatal("expired offset came back from the log")
	}
}

// A restart in the middle of a rebalance does not bring back a member that
// had left: the remaining one rejoins and the rebalance completes at once,
// rather than after the leaver's session timeout.
func TestRestartMidRebalanceForgetsLeftMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	a, b := h.stableTwoMembers("g")
	h.do(func(s *shard) { s.leave("g", leaveMembers(b)) })
	h.restart(testConfig())
	if code := h.heartbeat("g", a, 2, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after the restart: %d, want REBALANCE_IN_PROGRESS", code)
	}
	r := answered(t, h.join(joinReq("g", a)))
	if r.Generation != 3 || len(r.Members) != 1 || r.LeaderID != a {
		t.Fatalf("rejoin after the restart: %+v, want generation 3 with a alone", r)
	}
	// A restart once the rebalance is over changes nothing.
	answered(t, h.sync("g", a, 3, map[string]string{a: "all"}))
	h.restart(testConfig())
	if code := h.heartbeat("g", a, 3, nil); code != 0 {
		t.Fatalf("heartbeat after a restart of a stable group: %d", code)
	}
}
