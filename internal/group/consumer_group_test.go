package group

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/group/assignor"
	"kbroker/internal/meta"
)

// consumerHarness is a harness whose consumer groups resolve topics from a
// real bbolt-backed metadata store.
type consumerHarness struct {
	*harness
	store *meta.Store
	cfg   Config
}

func newConsumerHarness(t *testing.T) *consumerHarness {
	t.Helper()
	backend, err := meta.OpenBolt(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := meta.Open(backend, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	cfg := testConfig()
	cfg.Consumer = ConsumerConfig{
		SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second,
		MaxSize: 1 << 30, Assignors: []string{"uniform", "range"}, MigrationPolicy: "bidirectional",
	}
	cfg.Metadata = store.Snapshot
	return &consumerHarness{harness: newHarness(t, cfg), store: store, cfg: cfg}
}

func (h *consumerHarness) topic(name string, partitions int32) assignor.TopicID {
	h.t.Helper()
	t, err := h.store.CreateTopic(context.Background(), meta.Topic{Name: name, ID: meta.NewTopicID(), Partitions: partitions, ReplicationFactor: 1}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return assignor.TopicID(t.ID)
}

func (h *consumerHarness) hb(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	return h.c.ConsumerHeartbeat(context.Background(), req, Client{ID: "client", Host: "/127.0.0.1"}, nil)
}

// joinHB is a v1 join of member subscribing to topics.
func joinHB(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, 0
	r.RebalanceTimeoutMillis = 60_000
	r.SubscribedTopicNames = topics
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

// beat is a heartbeat at epoch reporting owned (nil: a keep-alive that
// reports nothing).
func beat(group, member string, epoch int32, owned assignor.Assignment) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
	if owned != nil {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, id := range sortedTopicIDs(owned) {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = id, owned[id]
			r.Topics = append(r.Topics, t)
		}
	}
	return r
}

func assignedOf(resp *kmsg.ConsumerGroupHeartbeatResponse) assignor.Assignment {
	if resp.Assignment == nil {
		return nil
	}
	out := assignor.Assignment{}
	for _, t := range resp.Assignment.Topics {
		out[t.TopicID] = slices.Clone(t.Partitions)
	}
	return out
}

func ok(t *testing.T, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		t.Fatalf("heartbeat: %v %s", kerr.ErrorForCode(resp.ErrorCode), msg)
	}
	return resp
}

func TestConsumerHeartbeatRequestValidation(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	badRegex := "("
	unknownAssignor := "sticky"
	empty := ""
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty group id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"empty instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = &empty }, kerr.InvalidRequest},
		{"empty rack id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = &empty }, kerr.InvalidRequest},
		{"epoch below -2", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"v1 without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"join with null owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = &badRegex }, kerr.InvalidRegularExpression},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = &unknownAssignor }, kerr.UnsupportedAssignor},
		{"heartbeat to a missing group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "nobody", 3 }, kerr.GroupIDNotFound},
		{"leave of a missing group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "nobody", -1 }, kerr.GroupIDNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := joinHB("g", "m1", "t")
			tc.mod(r)
			if got := h.hb(r); got.ErrorCode != tc.want.Code {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got.ErrorCode), tc.want)
			}
		})
	}
}

// The core of KIP-848: a partition moves to its new owner only once the
// old owner reported it revoked, and the old owner's epoch advances only
// then.
func TestConsumerRevocationBeforeReassignment(t *testing.T) {
	h := newConsumerHarness(t)
	tid := h.topic("t", 6)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	if a.MemberEpoch != 1 || countPartitions(assignedOf(a)) != 6 {
		t.Fatalf("first member: epoch %d, %v; want epoch 1 with all 6 partitions", a.MemberEpoch, assignedOf(a))
	}
	ownedA := assignedOf(a)

	b := ok(t, h.hb(joinHB("g", "b", "t")))
	if b.MemberEpoch != 2 || countPartitions(assignedOf(b)) != 0 {
		t.Fatalf("second member: epoch %d, %v; want epoch 2 and nothing while a holds everything", b.MemberEpoch, assignedOf(b))
	}
	// a is asked to revoke half: its epoch stays until it has.
	a = ok(t, h.hb(beat("g", "a", 1, ownedA)))
	if a.MemberEpoch != 1 || countPartitions(assignedOf(a)) != 3 {
		t.Fatalf("a after the new epoch: epoch %d, %v; want epoch 1 with 3 kept", a.MemberEpoch, assignedOf(a))
	}
	kept := assignedOf(a)
	// a still reports all six: b gets nothing yet, a stays put.
	if b = ok(t, h.hb(beat("g", "b", 2, assignor.Assignment{}))); countPartitions(assignedOf(b)) != 0 {
		t.Fatalf("b got %v while a still owns them", assignedOf(b))
	}
	if a = ok(t, h.hb(beat("g", "a", 1, ownedA))); a.MemberEpoch != 1 {
		t.Fatalf("a advanced to %d while still owning the revoked partitions", a.MemberEpoch)
	}
	// a revokes: its epoch advances; then b gets the other three.
	if a = ok(t, h.hb(beat("g", "a", 1, kept))); a.MemberEpoch != 2 {
		t.Fatalf("a after revoking: epoch %d, want 2", a.MemberEpoch)
	}
	b = ok(t, h.hb(beat("g", "b", 2, assignor.Assignment{})))
	got := assignedOf(b)
	if countPartitions(got) != 3 || overlaps(got, kept) {
		t.Fatalf("b got %v, a kept %v: want the other 3", got, kept)
	}
	if len(got[tid]) != 3 {
		t.Fatalf("b's partitions are not of topic t: %v", got)
	}
	h.do(func(s *shard) {
		if st := s.groups["g"].consumer.state(); st != "Stable" {
			t.Errorf("group state %s, want Stable", st)
		}
	})
}

func TestConsumerEpochFencing(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	owned := assignedOf(a)
	ok(t, h.hb(joinHB("g", "b", "t"))) // epoch 2; a must revoke one
	a = ok(t, h.hb(beat("g", "a", 1, owned)))
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	if a.MemberEpoch != 2 {
		t.Fatalf("a at epoch %d, want 2", a.MemberEpoch)
	}
	kept := assignedOf(a)
	if kept == nil {
		// The assignment did not change on this beat: a keeps its one.
		h.do(func(s *shard) { kept = cloneAssignment(s.groups["g"].consumer.members["a"].assigned) })
	}
	for _, tc := range []struct {
		name  string
		req   *kmsg.ConsumerGroupHeartbeatRequest
		want  *kerr.Error
		epoch int32
	}{
		{"a newer epoch than the coordinator's", beat("g", "a", 3, kept), kerr.FencedMemberEpoch, 0},
		{"an older epoch, not the previous one", beat("g", "a", 0, kept), kerr.InvalidRequest, 0}, // epoch 0 is a join: owned must be empty
		{"the previous epoch with owned partitions outside the assignment", beat("g", "a", 1, owned), kerr.FencedMemberEpoch, 0},
		{"the previous epoch without owned partitions", beat("g", "a", 1, nil), kerr.FencedMemberEpoch, 0},
		{"the previous epoch with a subset (lost response)", beat("g", "a", 1, kept), nil, 2},
		{"an unknown member", beat("g", "zz", 2, nil), kerr.UnknownMemberID, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.hb(tc.req)
			if tc.want == nil {
				ok(t, got)
				if got.MemberEpoch != tc.epoch {
					t.Fatalf("epoch %d, want %d", got.MemberEpoch, tc.epoch)
				}
				return
			}
			if got.ErrorCode != tc.want.Code {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got.ErrorCode), tc.want)
			}
		})
	}
	// A fenced member rejoins with epoch 0 under its id and starts over.
	if r := ok(t, h.hb(joinHB("g", "a", "t"))); r.MemberEpoch < 2 {
		t.Fatalf("rejoin epoch %d", r.MemberEpoch)
	}
}

func TestConsumerLeaveFreesPartitions(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 4)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	ok(t, h.hb(joinHB("g", "b", "t")))
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	b := ok(t, h.hb(beat("g", "b", 2, assignor.Assignment{})))
	if countPartitions(assignedOf(b)) != 2 {
		t.Fatalf("b has %v, want 2 partitions", assignedOf(b))
	}
	leave := beat("g", "a", -1, nil)
	if r := ok(t, h.hb(leave)); r.MemberEpoch != -1 {
		t.Fatalf("leave answered epoch %d, want -1", r.MemberEpoch)
	}
	b = ok(t, h.hb(beat("g", "b", 2, assignedOf(b))))
	if b.MemberEpoch != 3 || countPartitions(assignedOf(b)) != 4 {
		t.Fatalf("after a left, b: epoch %d, %v; want epoch 3 with all 4", b.MemberEpoch, assignedOf(b))
	}
	if r := h.hb(beat("g", "a", 2, nil)); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a heartbeat after leaving: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestConsumerSessionExpiry(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	if a.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("heartbeat interval %d, want group.consumer.heartbeat.interval.ms 5000", a.HeartbeatIntervalMillis)
	}
	b := ok(t, h.hb(joinHB("g", "b", "t")))
	// a goes silent; b keeps beating until a's session (45 s) is over.
	for i := 0; i < 10; i++ {
		h.advance(5 * time.Second)
		b = ok(t, h.hb(beat("g", "b", b.MemberEpoch, assignor.Assignment{})))
	}
	h.do(func(s *shard) {
		if s.groups["g"].consumer.members["a"] != nil {
			t.Fatal("a outlived its session timeout")
		}
	})
	b = ok(t, h.hb(beat("g", "b", b.MemberEpoch, assignor.Assignment{})))
	if countPartitions(assignedOf(b)) != 2 && countPartitions(h.group("g").consumer.members["b"].assigned) != 2 {
		t.Fatalf("b did not take over a's partitions")
	}
}

// A static member that leaves with -2 keeps its assignment; the instance
// rejoining under a new member id gets it back at once, without a new
// group epoch; while the first instance is active the id is not free.
func TestConsumerStaticMemberRejoin(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 4)
	inst := "instance-1"
	j := joinHB("g", "a", "t")
	j.InstanceID = &inst
	a := ok(t, h.hb(j))
	ok(t, h.hb(joinHB("g", "b", "t")))
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	kept := assignedOf(a)
	withInst := func(r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatRequest {
		r.InstanceID = &inst
		return r
	}
	a = ok(t, h.hb(withInst(beat("g", "a", 1, kept))))
	epochBefore := h.group("g").consumer.epoch

	dup := joinHB("g", "a2", "t")
	dup.InstanceID = &inst
	if r := h.hb(dup); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second instance while the first is active: %v, want UNRELEASED_INSTANCE_ID", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := h.hb(withInst(beat("g", "a", -2, nil))); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	r := ok(t, h.hb(dup))
	if !equalAssignments(assignedOf(r), kept) {
		t.Fatalf("rejoined static member got %v, want its old %v", assignedOf(r), kept)
	}
	if g := h.group("g").consumer; g.epoch != epochBefore || g.members["a"] != nil {
		t.Fatalf("static rejoin: epoch %d (was %d), old member kept: %v", g.epoch, epochBefore, g.members["a"] != nil)
	}
	if r := h.hb(withInst(beat("g", "a", 2, nil))); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old member of the instance: %v, want FENCED_INSTANCE_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A regex subscription is resolved by the broker against the topics, and
// again when topics are created.
func TestConsumerRegexSubscription(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("orders", 1)
	h.topic("other", 1)
	re := "ord.*"
	j := joinHB("g", "a", "x")
	j.SubscribedTopicNames, j.SubscribedTopicRegex = nil, &re
	a := ok(t, h.hb(j))
	if countPartitions(assignedOf(a)) != 1 {
		t.Fatalf("regex resolved to %v, want orders only", assignedOf(a))
	}
	owned := assignedOf(a)
	h.topic("orders-eu", 2)
	// Within 10 s of the last resolution the new topic waits
	// (REGEX_BATCH_REFRESH_INTERVAL_MS), as in Kafka.
	h.advance(5 * time.Second)
	a = ok(t, h.hb(beat("g", "a", a.MemberEpoch, owned)))
	if a.MemberEpoch != 1 {
		t.Fatalf("regex re-resolved 5 s after the last resolution: epoch %d, want 1", a.MemberEpoch)
	}
	h.advance(5 * time.Second)
	a = ok(t, h.hb(beat("g", "a", a.MemberEpoch, owned)))
	if a.MemberEpoch != 2 || countPartitions(assignedOf(a)) != 3 {
		t.Fatalf("10 s after creating orders-eu: epoch %d, %v; want epoch 2 with 3 partitions", a.MemberEpoch, assignedOf(a))
	}
}

// The group's epoch, members and assignments are in __consumer_offsets
// and come back after a restart: a member heartbeats on at its epoch.
func TestConsumerGroupReplayAfterRestart(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 4)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	b := ok(t, h.hb(joinHB("g", "b", "t")))
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	keptA := assignedOf(a)
	a = ok(t, h.hb(beat("g", "a", 1, keptA)))
	b = ok(t, h.hb(beat("g", "b", 2, assignor.Assignment{})))
	keptB := assignedOf(b)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "g", "b", 2
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = keptB[sortedTopicIDs(keptB)[0]][0], 42
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if code := h.c.Commit(context.Background(), commit)[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}

	h.restart(h.cfg)
	g := h.group("g")
	if g == nil || g.consumer == nil {
		t.Fatal("the consumer group did not come back")
	}
	if g.consumer.epoch != 2 || g.consumer.assignmentEpoch != 2 || len(g.consumer.members) != 2 {
		t.Fatalf("replayed epoch %d, assignment epoch %d, %d members; want 2, 2, 2", g.consumer.epoch, g.consumer.assignmentEpoch, len(g.consumer.members))
	}
	if !equalAssignments(g.consumer.members["b"].assigned, keptB) || !equalAssignments(g.consumer.members["a"].assigned, keptA) {
		t.Fatal("replayed assignments differ")
	}
	if g.offsets["t"][cp.Partition].offset != 42 {
		t.Fatal("the member's commit was not replayed")
	}
	if r := ok(t, h.hb(beat("g", "b", 2, keptB))); r.MemberEpoch != 2 {
		t.Fatalf("heartbeat after restart: epoch %d", r.MemberEpoch)
	}
}

func TestConsumerOffsetCommitMemberEpoch(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	commit := func(version int16, member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, "g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.c.Commit(context.Background(), req)[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name    string
		version int16
		member  string
		epoch   int32
		want    int16
	}{
		{"current epoch", 9, "a", 1, 0},
		{"older epoch", 9, "a", 0, kerr.StaleMemberEpoch.Code},
		{"newer epoch", 9, "a", 2, kerr.FencedMemberEpoch.Code},
		{"unknown member", 9, "zz", 1, kerr.UnknownMemberID.Code},
		{"simple commit into a group with members", 9, "", -1, kerr.UnknownMemberID.Code},
		{"pre-v9 commit of a member", 8, "a", 1, kerr.UnsupportedVersion.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commit(tc.version, tc.member, tc.epoch); got != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		})
	}
}

// TxnOffsetCommit into a consumer group checks the member and its epoch as
// OffsetCommit does (Kafka's validateOffsetCommit with isTransactional),
// at any version: franz-go's GroupTransactSession over KIP-848 commits
// with the member epoch as the generation.
func TestConsumerTxnOffsetCommitMemberEpoch(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	for _, tc := range []struct {
		name    string
		version int16
		member  string
		epoch   int32
		want    int16
	}{
		{"current epoch", 3, "a", 1, 0},
		{"older epoch", 3, "a", 0, kerr.StaleMemberEpoch.Code},
		{"newer epoch", 3, "a", 2, kerr.FencedMemberEpoch.Code},
		{"unknown member", 3, "zz", 1, kerr.UnknownMemberID.Code},
		{"no member into a group with members", 0, "", -1, kerr.UnknownMemberID.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.Group, req.MemberID, req.Generation = tc.version, "g", tc.member, tc.epoch
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx", 7, 0
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			if got := h.c.TxnCommit(context.Background(), req)[0].Partitions[0].ErrorCode; got != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		})
	}
}

// An empty consumer group goes back to classic on a JoinGroup, keeping its
// offsets; an empty classic group becomes a consumer group on a join.
func TestConsumerGroupConversionWhenEmpty(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	connect := joinReq("g", "")
	connect.ProtocolType = "connect"
	if r := answered(t, h.join(connect)); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of another protocol type into an active consumer group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A classic consumer is taken in as a classic member (migration.go):
	// first its member id, as into a classic group.
	if r := answered(t, h.join(joinReq("g", ""))); r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join into an active consumer group: %v, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(r.ErrorCode))
	}
	ok(t, h.hb(beat("g", "a", -1, nil)))
	groups, _ := h.c.List(context.Background(), nil, []string{"consumer"})
	if len(groups) != 1 || groups[0].State != "Empty" || groups[0].Type != "consumer" {
		t.Fatalf("ListGroups consumer: %+v", groups)
	}
	if r := answered(t, h.join(joinReq("g", ""))); r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join into an empty consumer group: %v, want MEMBER_ID_REQUIRED (converted)", kerr.ErrorForCode(r.ErrorCode))
	}
	if g := h.group("g"); g.consumer != nil {
		t.Fatal("still a consumer group")
	}
	h.restart(h.cfg)
	if g := h.group("g"); g == nil || g.consumer != nil {
		t.Fatal("the conversion to classic did not survive a restart")
	}
	ok(t, h.hb(joinHB("g", "b", "t")))
	if g := h.group("g"); g.consumer == nil {
		t.Fatal("an empty classic group was not converted by a consumer join")
	}
}

func TestConsumerGroupDescribe(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 3)
	ok(t, h.hb(joinHB("g", "a", "t")))
	d := h.c.ConsumerDescribe(context.Background(), "g")
	if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 1 || d.AssignorName != "uniform" || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if m := d.Members[0]; len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "t" || len(m.Assignment.TopicPartitions[0].Partitions) != 3 {
		t.Fatalf("member assignment: %+v", m.Assignment)
	}
	if d := h.c.ConsumerDescribe(context.Background(), "missing"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	classic := h.c.Describe(context.Background(), 5, "g")
	if classic.ProtocolType != "consumer" || classic.State != "Stable" || len(classic.Members) != 1 {
		t.Fatalf("DescribeGroups of a consumer group: %+v", classic)
	}
}

func TestConsumerConfigDefaults(t *testing.T) {
	c := ConfigFrom(config.Layers{}).Consumer
	if c.SessionTimeout != 45*time.Second || c.MinSessionTimeout != 45*time.Second || c.MaxSessionTimeout != 60*time.Second ||
		c.HeartbeatInterval != 5*time.Second || c.MinHeartbeatInterval != 5*time.Second || c.MaxHeartbeatInterval != 15*time.Second ||
		c.MaxSize != 1<<31-1 || !slices.Equal(c.Assignors, []string{"uniform", "range"}) || c.MigrationPolicy != "bidirectional" || c.Disabled {
		t.Fatalf("defaults %+v differ from Kafka 4.0's", c)
	}
	c = ConfigFrom(config.Layers{Static: config.Properties{
		"group.coordinator.rebalance.protocols": "classic",
		"group.consumer.assignors":              "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
		"group.consumer.migration.policy":       "UPGRADE",
	}}).Consumer
	if !c.Disabled || !slices.Equal(c.Assignors, []string{"range"}) || c.MigrationPolicy != "upgrade" {
		t.Fatalf("overrides read as %+v", c)
	}
	if migrationPolicy("sideways") != "disabled" {
		t.Fatal("an unknown migration policy must disable migration, as Kafka parses it")
	}
}

// A member that does not revoke within its rebalance timeout is fenced,
// so its partitions can move on.
func TestConsumerRebalanceTimeoutFencesUnrevokedMember(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	all := assignedOf(a)
	b := ok(t, h.hb(joinHB("g", "b", "t")))
	a = ok(t, h.hb(beat("g", "a", 1, all))) // asked to revoke one
	for i := 0; i < 13; i++ {               // 65 s: past the 60 s rebalance timeout, never past a session
		h.advance(5 * time.Second)
		if r := h.hb(beat("g", "a", 1, all)); r.ErrorCode != 0 {
			if r.ErrorCode != kerr.UnknownMemberID.Code {
				t.Fatalf("a: %v, want UNKNOWN_MEMBER_ID once fenced", kerr.ErrorForCode(r.ErrorCode))
			}
			b = ok(t, h.hb(beat("g", "b", b.MemberEpoch, assignor.Assignment{})))
			if n := countPartitions(h.group("g").consumer.members["b"].assigned); n != 2 {
				t.Fatalf("b has %d partitions after a was fenced, want 2", n)
			}
			return
		}
		b = ok(t, h.hb(beat("g", "b", b.MemberEpoch, assignor.Assignment{})))
		if i < 11 && countPartitions(h.group("g").consumer.members["b"].assigned) != 0 {
			t.Fatal("b was given a partition a has not revoked")
		}
	}
	t.Fatal("a held a revoked partition past its rebalance timeout")
}

func TestConsumerGroupLimitsAndSettings(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	cfg := h.cfg
	cfg.Consumer.MaxSize = 1
	cfg.GroupSettings = func(id string) (time.Duration, time.Duration, bool) {
		if id == "tuned" {
			return 50 * time.Second, 7 * time.Second, true
		}
		return 0, 0, false
	}
	h.restart(cfg)
	ok(t, h.hb(joinHB("g", "a", "t")))
	if r := h.hb(joinHB("g", "b", "t")); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("member over group.consumer.max.size: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A v0 join sends no member id: the coordinator makes one.
	v0 := joinHB("tuned", "", "t")
	v0.Version = 0
	r := ok(t, h.hb(v0))
	if r.MemberID == nil || *r.MemberID == "" || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("v0 join: member %v, interval %d; want a generated id and the group's 7000 ms", r.MemberID, r.HeartbeatIntervalMillis)
	}
	h.advance(46 * time.Second) // past the broker's 45 s, within the group's 50 s
	if h.group("tuned").consumer.members[*r.MemberID] == nil {
		t.Fatal("the group's own session timeout was not applied")
	}
}

func TestConsumerGroupStatsByType(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	st := h.c.Stats(context.Background())
	if st.ConsumerGroups["Stable"] != 1 || st.Groups[Empty] != 0 {
		t.Fatalf("stats: consumer %v, classic %v", st.ConsumerGroups, st.Groups)
	}
}

// OffsetDelete refuses the topics a consumer group's members subscribe to.
func TestConsumerGroupOffsetDeleteOfSubscribedTopic(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	h.topic("old", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	h.do(func(s *shard) {
		g := s.groups["g"]
		g.setOffset("t", 0, committed{offset: 1, expireTime: -1})
		g.setOffset("old", 0, committed{offset: 1, expireTime: -1})
	})
	topics, code := h.c.DeleteOffsets(context.Background(), "g", []FetchTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "old", Partitions: []int32{0}}})
	if code != 0 || len(topics) != 2 {
		t.Fatalf("OffsetDelete: %v %+v", kerr.ErrorForCode(code), topics)
	}
	if topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("subscribed topic: %v, unsubscribed: %v", kerr.ErrorForCode(topics[0].Partitions[0].ErrorCode), kerr.ErrorForCode(topics[1].Partitions[0].ErrorCode))
	}
}

// A deleted topic leaves the assignment at the next heartbeat: the group
// epoch moves, and the member is asked to revoke its partitions.
func TestConsumerTopicDeletionBumpsEpoch(t *testing.T) {
	h := newConsumerHarness(t)
	keep := h.topic("keep", 1)
	h.topic("gone", 2)
	a := ok(t, h.hb(joinHB("g", "a", "keep", "gone")))
	if countPartitions(assignedOf(a)) != 3 {
		t.Fatalf("assigned %v, want 3 partitions", assignedOf(a))
	}
	if err := h.store.DeleteTopic(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	a = ok(t, h.hb(beat("g", "a", 1, assignedOf(a))))
	got := assignedOf(a)
	if h.group("g").consumer.epoch != 2 || countPartitions(got) != 1 || len(got[keep]) != 1 {
		t.Fatalf("after deleting a topic: epoch %d, assigned %v; want epoch 2 and keep's partition only", h.group("g").consumer.epoch, got)
	}
}

// A heartbeat that changes nothing writes nothing: a steady group costs
// __consumer_offsets no appends.
func TestConsumerKeepAliveWritesNothing(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	before := h.log.HighWatermark()
	for range 5 {
		ok(t, h.hb(beat("g", "a", a.MemberEpoch, nil)))
		ok(t, h.hb(beat("g", "a", a.MemberEpoch, assignedOf(a))))
	}
	if after := h.log.HighWatermark(); after != before {
		t.Fatalf("keep-alive heartbeats appended %d records", after-before)
	}
}

// A fenced static member rejoins under its own member id and instance:
// it is the same instance, not a second one.
func TestConsumerStaticMemberRejoinsUnderItsID(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	inst := "i"
	j := joinHB("g", "a", "t")
	j.InstanceID = &inst
	ok(t, h.hb(j))
	fenced := beat("g", "a", 5, nil)
	fenced.InstanceID = &inst
	if r := h.hb(fenced); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("%v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := ok(t, h.hb(j)); countPartitions(assignedOf(r)) != 1 {
		t.Fatalf("rejoined static member got %v", assignedOf(r))
	}
}

func TestConsumerOffsetFetchMemberEpoch(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 1)
	ok(t, h.hb(joinHB("g", "a", "t")))
	id := func(s string) *string { return &s }
	for _, tc := range []struct {
		member *string
		epoch  int32
		want   int16
	}{
		{nil, -1, 0},
		{id("a"), 1, 0},
		{id("a"), 0, kerr.StaleMemberEpoch.Code},
		{id("a"), 2, kerr.FencedMemberEpoch.Code},
		{id("zz"), 1, kerr.UnknownMemberID.Code},
	} {
		if got := h.c.ValidateFetchMember(context.Background(), "g", tc.member, tc.epoch); got != tc.want {
			t.Errorf("member %v epoch %d: %v, want %v", tc.member, tc.epoch, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// A member's session counts the silence before a coordinator restart: a
// member gone quiet is fenced once its session timeout has passed even if
// the coordinator restarts more often than that, while a member that keeps
// heartbeating across the same restarts stays.
func TestConsumerSessionSpansRestarts(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	ok(t, h.hb(joinHB("g", "quiet", "t")))
	b := ok(t, h.hb(joinHB("g", "live", "t")))
	owned := assignor.Assignment{}
	for elapsed := time.Duration(0); elapsed < 60*time.Second; elapsed += 4 * time.Second {
		h.advance(2 * time.Second)
		b = ok(t, h.hb(beat("g", "live", b.MemberEpoch, owned)))
		if a := assignedOf(b); a != nil {
			owned = a
		}
		h.advance(2 * time.Second)
		h.restart(h.cfg)
	}
	h.advance(time.Second) // the grace after the last load
	var quiet, live bool
	h.do(func(s *shard) {
		cg := s.groups["g"].consumer
		quiet, live = cg.members["quiet"] != nil, cg.members["live"] != nil
	})
	if quiet {
		t.Error("the quiet member outlived its session timeout across restarts")
	}
	if !live {
		t.Error("the live member was fenced although it heartbeat between restarts")
	}
}

// A heartbeat whose records cannot be appended leaves the group as the log
// has it: the joining member is not in the group, the epoch and targets
// did not move (Kafka reverts a failed append).
func TestConsumerFailedAppendRollsBack(t *testing.T) {
	h := newConsumerHarness(t)
	h.topic("t", 2)
	a := ok(t, h.hb(joinHB("g", "a", "t")))
	h.log.Close() // every append fails from here
	if r := h.hb(joinHB("g", "b", "t")); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join with a failing log: %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := h.hb(beat("g", "a", -1, nil)); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("leave with a failing log: %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	var members []string
	var epoch int32
	var targetA int
	h.do(func(s *shard) {
		cg := s.groups["g"].consumer
		for id := range cg.members {
			members = append(members, id)
		}
		epoch, targetA = cg.epoch, countPartitions(cg.target["a"])
	})
	if len(members) != 1 || members[0] != "a" || epoch != a.MemberEpoch || targetA != 2 {
		t.Fatalf("after failed appends: members %v, epoch %d (want %d), a's target %d partitions (want 2)", members, epoch, a.MemberEpoch, targetA)
	}
}
