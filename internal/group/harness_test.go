package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
	"kbroker/internal/storage"
)

// harness is a coordinator with one shard over a real partition log in a
// temporary directory, on a clock the test moves.
type harness struct {
	t     *testing.T
	dir   string
	clock *coordinator.ManualClock
	c     *Coordinator
	log   *storage.Log
	rs    *coordinator.Shard
}

func testConfig() Config {
	return Config{
		Partitions: 1, MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute,
		InitialRebalanceDelay: 0, MaxSize: 1 << 30, MaxMetadataBytes: 4096,
	}
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: coordinator.NewManualClock(time.Unix(1_700_000_000, 0))}
	h.open(cfg)
	return h
}

// open (re)starts the coordinator over the harness's log directory.
func (h *harness) open(cfg Config) {
	h.t.Helper()
	l, err := storage.Open(h.dir, storage.DefaultConfig())
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = l
	h.c = New(cfg, h.clock, nil)
	h.c.Load(0, l)
	h.rs = h.c.rt.Shard(0)
	for deadline := time.Now().Add(5 * time.Second); !h.rs.Loaded(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatal("shard did not load")
		}
	}
	h.t.Cleanup(h.close)
}

func (h *harness) close() {
	if h.c != nil {
		h.c.Close()
		h.log.Close()
		h.c = nil
	}
}

// restart stops the coordinator and loads it again from its log.
func (h *harness) restart(cfg Config) {
	h.close()
	h.open(cfg)
}

// do runs fn on the shard's loop and returns once it has run.
func (h *harness) do(fn func(s *shard)) {
	h.t.Helper()
	done := make(chan struct{})
	if err := h.rs.Do(func() { fn(h.rs.State().(*shard)); close(done) }); err != nil {
		h.t.Fatal(err)
	}
	<-done
}

// advance moves the clock and waits for what fired to have run.
func (h *harness) advance(d time.Duration) {
	h.clock.Advance(d)
	h.do(func(*shard) {})
}

func (h *harness) group(id string) *group {
	var g *group
	h.do(func(s *shard) { g = s.groups[id] })
	return g
}

type joinOpt func(*kmsg.JoinGroupRequest)

func withInstance(id string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.InstanceID = &id }
}

func withMetadata(md string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.Protocols[0].Metadata = []byte(md) }
}

func withVersion(v int16) joinOpt { return func(r *kmsg.JoinGroupRequest) { r.Version = v } }

func joinReq(group, member string, opts ...joinOpt) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10_000, 60_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("m")
	r.Protocols = append(r.Protocols, p)
	for _, o := range opts {
		o(r)
	}
	return r
}

// join sends a JoinGroup; its answer arrives on the channel, at once or
// when the rebalance completes.
func (h *harness) join(req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	h.do(func(s *shard) {
		s.join(req, Client{ID: "client", Host: "/127.0.0.1"}, func(r *kmsg.JoinGroupResponse) { ch <- r })
	})
	h.fireZeroDelay()
	return ch
}

// fireZeroDelay runs what the last request scheduled to run at once, as a
// real clock would before the next request: with
// group.initial.rebalance.delay.ms=0 the first rebalance of an empty group
// completes on such a timer, re-armed once while members keep joining.
func (h *harness) fireZeroDelay() {
	h.advance(0)
	h.advance(0)
}

// answered returns the answer on ch, failing if there is none yet.
func answered[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
		var zero T
		t.Fatal("no answer yet: the request is still parked")
		return zero
	}
}

func parked[T any](t *testing.T, ch chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("answered while it should be parked: %+v", v)
	default:
	}
}

// joinNew takes a dynamic member through MEMBER_ID_REQUIRED and returns
// its id and the channel of its real join.
func (h *harness) joinNew(group string, opts ...joinOpt) (string, chan *kmsg.JoinGroupResponse) {
	h.t.Helper()
	first := answered(h.t, h.join(joinReq(group, "", opts...)))
	if first.ErrorCode != 79 { // MEMBER_ID_REQUIRED
		h.t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", first.ErrorCode)
	}
	return first.MemberID, h.join(joinReq(group, first.MemberID, opts...))
}

func (h *harness) sync(group, member string, gen int32, assign map[string]string) chan *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	h.do(func(s *shard) { s.sync(req, func(r *kmsg.SyncGroupResponse) { ch <- r }) })
	return ch
}

func (h *harness) heartbeat(group, member string, gen int32, instance *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	var code int16
	h.do(func(s *shard) { code = s.heartbeat(req) })
	return code
}

func (h *harness) commit(version int16, group, member string, gen int32, offset int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "t"
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := h.c.Commit(context.Background(), req)
	return resp[0].Partitions[0].ErrorCode
}

func (h *harness) fetched(group string) int64 {
	got, code := h.c.Fetch(context.Background(), group, []FetchTopic{{Topic: "t", Partitions: []int32{0}}})
	if code != 0 {
		h.t.Fatalf("fetch: error %d", code)
	}
	return got[0].Partitions[0].Offset
}

func leaveMembers(ids ...string) []kmsg.LeaveGroupRequestMember {
	var out []kmsg.LeaveGroupRequestMember
	for _, id := range ids {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		out = append(out, m)
	}
	return out
}

// stableTwoMembers brings group to Stable at generation 2 with a (leader,
// joined first) and b.
func (h *harness) stableTwoMembers(group string) (a, b string) {
	h.t.Helper()
	a, aJoin := h.joinNew(group)
	answered(h.t, aJoin)
	answered(h.t, h.sync(group, a, 1, map[string]string{a: "all"}))
	b, bJoin := h.joinNew(group)
	answered(h.t, h.join(joinReq(group, a)))
	answered(h.t, bJoin)
	bSync := h.sync(group, b, 2, nil)
	answered(h.t, h.sync(group, a, 2, map[string]string{a: "half", b: "half"}))
	answered(h.t, bSync)
	return a, b
}
