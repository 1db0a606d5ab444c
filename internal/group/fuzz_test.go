package group

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group APIs a client drives the coordinator with, and the versions the
// broker serves (internal/api's registrations).
var fuzzAPIs = []struct {
	key      kmsg.Key
	min, max int16
}{
	{kmsg.JoinGroup, 0, 9},
	{kmsg.SyncGroup, 0, 5},
	{kmsg.Heartbeat, 0, 4},
	{kmsg.LeaveGroup, 0, 5},
	{kmsg.OffsetCommit, 0, 9},
	{kmsg.OffsetFetch, 0, 9},
}

// fuzzAdvance is the op, after the APIs, that moves the clock instead of
// sending a request, so session timeouts, rebalance timeouts and the
// initial delay fire in the middle of a sequence.
var fuzzAdvance = byte(len(fuzzAPIs))

// fuzzDeleteTopic is the op that deletes the topic its body names
// (TopicsDeleted), as a DeleteTopics does between group requests.
var fuzzDeleteTopic = fuzzAdvance + 1

// fuzzCallBound is how long one call may take. A JoinGroup or SyncGroup
// may rightly park until its group's rebalance completes, so each call
// gets a short context (fuzzCallContext) and must return soon after it
// ends: a call that does not means the shard's loop is wedged.
const (
	fuzzCallContext = 20 * time.Millisecond
	fuzzCallBound   = 5 * time.Second
	fuzzMaxMessages = 16
)

// fuzzMessage encodes one message of a FuzzGroupRequests input: op (an
// index into fuzzAPIs, or fuzzAdvance), version offset from the API's
// minimum, body length, body.
func fuzzMessage(op byte, req kmsg.Request) []byte {
	var body []byte
	var version byte
	if req != nil {
		body = req.AppendTo(nil)
		version = byte(req.GetVersion() - fuzzAPIs[op].min)
	}
	out := []byte{op, version, 0, 0}
	binary.BigEndian.PutUint16(out[2:], uint16(len(body)))
	return append(out, body...)
}

// fuzzMember is a member id placeholder: a request whose member id is
// "$N" gets the Nth member id the coordinator handed out in this input, so
// the fuzzer can reach the paths of known members (whose ids are random).
func fuzzMember(n int) string { return "$" + strconv.Itoa(n) }

type fuzzRun struct {
	t   *testing.T
	h   *harness
	ids []string // member ids handed out, in order
}

func (r *fuzzRun) member(id string) string {
	if len(id) < 2 || id[0] != '$' || len(r.ids) == 0 {
		return id
	}
	n, err := strconv.Atoi(id[1:])
	if err != nil || n < 0 {
		return id
	}
	return r.ids[n%len(r.ids)]
}

func (r *fuzzRun) learn(id string) {
	if id != "" && len(r.ids) < 64 {
		r.ids = append(r.ids, id)
	}
}

// FuzzGroupRequests feeds sequences of arbitrary JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch bodies (decoded by
// kmsg at any served version) to a coordinator over a real partition log,
// with clock jumps between them. No call may panic or fail to return, and
// afterwards a well-behaved group on the same shard must still go through
// join, sync, heartbeat, commit and fetch — nothing a client sends can
// wedge the coordinator of other groups.
func FuzzGroupRequests(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 9, 0xff, 0xff})
	f.Fuzz(fuzzGroupRequests)
}

func fuzzGroupRequests(t *testing.T, in []byte) {
	cfg := testConfig()
	cfg.RetentionCheck, cfg.OffsetsRetention = time.Minute, time.Hour
	r := &fuzzRun{t: t, h: newHarness(t, cfg)}
	for n := 0; len(in) >= 4 && n < fuzzMaxMessages; n++ {
		op, vOff, size := in[0]%(fuzzDeleteTopic+1), in[1], int(binary.BigEndian.Uint16(in[2:4]))
		in = in[4:]
		if op == fuzzAdvance {
			// Up to ~109 minutes: past any session timeout the
			// coordinator accepts and the retention time above.
			r.h.advance(time.Duration(size) * 100 * time.Millisecond)
			continue
		}
		size = min(size, len(in))
		body := in[:size]
		in = in[size:]
		if op == fuzzDeleteTopic {
			ctx, cancel := context.WithTimeout(context.Background(), fuzzCallBound)
			start := time.Now()
			r.h.c.TopicsDeleted(ctx, []string{string(body)})
			cancel()
			if d := time.Since(start); d > fuzzCallBound {
				t.Fatalf("TopicsDeleted took %v to return", d)
			}
			continue
		}
		api := fuzzAPIs[op]
		req := kmsg.RequestForKey(int16(api.key))
		req.SetVersion(api.min + int16(int(vOff)%int(api.max-api.min+1)))
		if err := req.ReadFrom(body); err != nil {
			continue // the wire layer answers it as a malformed request
		}
		start := time.Now()
		r.send(req)
		if d := time.Since(start); d > fuzzCallBound {
			t.Fatalf("%s v%d took %v to return", kmsg.NameForKey(req.Key()), req.GetVersion(), d)
		}
	}
	r.probe()
}

// send runs req through the coordinator method its handler calls, with
// the handler's conversions.
func (r *fuzzRun) send(req kmsg.Request) {
	c := r.h.c
	ctx, cancel := context.WithTimeout(context.Background(), fuzzCallContext)
	defer cancel()
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		req.MemberID = r.member(req.MemberID)
		resp, _ := c.Join(ctx, req, Client{ID: "fuzz", Host: "127.0.0.1"})
		r.learn(resp.MemberID)
		r.encodes(resp, req.Version)
	case *kmsg.SyncGroupRequest:
		req.MemberID = r.member(req.MemberID)
		for i := range req.GroupAssignment {
			req.GroupAssignment[i].MemberID = r.member(req.GroupAssignment[i].MemberID)
		}
		resp, _ := c.Sync(ctx, req)
		r.encodes(resp, req.Version)
	case *kmsg.HeartbeatRequest:
		req.MemberID = r.member(req.MemberID)
		r.encodes(c.Heartbeat(ctx, req), req.Version)
	case *kmsg.LeaveGroupRequest:
		req.MemberID = r.member(req.MemberID)
		for i := range req.Members {
			req.Members[i].MemberID = r.member(req.Members[i].MemberID)
		}
		r.encodes(c.Leave(ctx, req), req.Version)
	case *kmsg.OffsetCommitRequest:
		req.MemberID = r.member(req.MemberID)
		if got := c.Commit(ctx, req); len(got) != len(req.Topics) {
			r.t.Fatalf("OffsetCommit v%d of %d topics answered %d", req.Version, len(req.Topics), len(got))
		}
	case *kmsg.OffsetFetchRequest:
		fetch := func(group string, topics []FetchTopic) {
			if _, code := c.Fetch(ctx, group, topics); code == 0 && group == "" {
				r.t.Fatalf("OffsetFetch of the empty group id answered no error")
			}
		}
		if req.Version >= 8 {
			for _, g := range req.Groups {
				var topics []FetchTopic
				if g.Topics != nil {
					topics = []FetchTopic{}
					for _, t := range g.Topics {
						topics = append(topics, FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
					}
				}
				fetch(g.Group, topics)
			}
			return
		}
		var topics []FetchTopic
		if req.Topics != nil || req.Version < 2 {
			topics = []FetchTopic{}
			for _, t := range req.Topics {
				topics = append(topics, FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		fetch(req.Group, topics)
	}
}

// encodes checks that the answer can be written at the request's version,
// as the handler will.
func (r *fuzzRun) encodes(resp kmsg.Response, version int16) {
	resp.SetVersion(version)
	_ = resp.AppendTo(nil)
}

// probe takes a fresh group through a whole generation on the shard the
// fuzzed requests used, each step with a bounded wait.
func (r *fuzzRun) probe() {
	t, c := r.t, r.h.c
	const group = "probe-after-fuzz"
	ctx, cancel := context.WithTimeout(context.Background(), fuzzCallBound)
	defer cancel()
	join := joinReq(group, "")
	first, _ := c.Join(ctx, join, Client{ID: "probe"})
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("probe join: error %d, want MEMBER_ID_REQUIRED", first.ErrorCode)
	}
	// The first rebalance of the empty group completes on a zero-delay
	// timer (group.initial.rebalance.delay.ms=0), which the test's clock
	// fires only when moved.
	answer := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, _ := c.Join(ctx, joinReq(group, first.MemberID), Client{ID: "probe"})
		answer <- resp
	}()
	var joined *kmsg.JoinGroupResponse
	for joined == nil {
		select {
		case joined = <-answer:
		case <-time.After(time.Millisecond):
			r.h.advance(0)
		}
	}
	if joined.ErrorCode != 0 || joined.LeaderID != first.MemberID {
		t.Fatalf("probe join with its member id: error %d, leader %q (want itself)", joined.ErrorCode, joined.LeaderID)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, first.MemberID, joined.Generation
	ga := kmsg.NewSyncGroupRequestGroupAssignment()
	ga.MemberID, ga.MemberAssignment = first.MemberID, []byte("all")
	sync.GroupAssignment = append(sync.GroupAssignment, ga)
	if synced, _ := c.Sync(ctx, sync); synced.ErrorCode != 0 || string(synced.MemberAssignment) != "all" {
		t.Fatalf("probe sync: error %d, assignment %q", synced.ErrorCode, synced.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, first.MemberID, joined.Generation
	if got := c.Heartbeat(ctx, hb); got.ErrorCode != 0 {
		t.Fatalf("probe heartbeat: error %d", got.ErrorCode)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 8, group, first.MemberID, joined.Generation
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 99
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if got := c.Commit(ctx, commit); got[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("probe commit: error %d", got[0].Partitions[0].ErrorCode)
	}
	got, code := c.Fetch(ctx, group, []FetchTopic{{Topic: "t", Partitions: []int32{0}}})
	if code != 0 || got[0].Partitions[0].Offset != 99 {
		t.Fatalf("probe fetch: error %d, answer %+v, want offset 99", code, got)
	}
}

// fuzzSeeds are sequences a real consumer sends: a v9 join (twice: the
// second with the id MEMBER_ID_REQUIRED handed out), the leader's sync, a
// heartbeat, a commit, a fetch and a leave; a v0 join of a second member
// and a clock jump past the session timeout; a commit whose topic is then
// deleted.
func fuzzSeeds() [][]byte {
	join := func(v int16, member string) kmsg.Request {
		r := joinReq("g", member)
		r.Version = v
		return r
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, "g", fuzzMember(0), 1
	pt, p := "consumer", "range"
	sync.ProtocolType, sync.Protocol = &pt, &p
	ga := kmsg.NewSyncGroupRequestGroupAssignment()
	ga.MemberID, ga.MemberAssignment = fuzzMember(0), []byte{0, 0, 0, 0, 0, 0, 0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, ga)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", fuzzMember(0), 1
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "g", fuzzMember(0), 1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 10
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = "g"
	fetch.Groups = append(fetch.Groups, fg)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = fuzzMember(0)
	leave.Members = append(leave.Members, lm)

	var whole []byte
	for _, m := range []struct {
		op  byte
		req kmsg.Request
	}{{0, join(9, "")}, {0, join(9, fuzzMember(0))}, {1, sync}, {2, hb}, {4, commit}, {5, fetch}, {3, leave}} {
		whole = append(whole, fuzzMessage(m.op, m.req)...)
	}
	// A simple commit (no member), then its topic deleted, then a fetch.
	simple := *commit
	simple.MemberID, simple.Generation = "", -1
	deleted := append(fuzzMessage(4, &simple), fuzzDeleteTopic, 0, 0, 1, 't')
	deleted = append(deleted, fuzzMessage(5, fetch)...)
	expiry := append(fuzzMessage(0, join(0, "")), fuzzMessage(0, join(0, ""))...)
	expiry = append(expiry, fuzzAdvance, 0, 0x01, 0x00) // 25.6 s: past the 10 s session timeout
	expiry = append(expiry, fuzzMessage(2, hb)...)
	return [][]byte{whole, expiry, deleted}
}
