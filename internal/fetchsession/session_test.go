package fetchsession

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

func req(topic string, p int32, offset int64) Request {
	return Request{Key: Key{Topic: topic, Partition: p}, Params: Params{FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20}}
}

func keys(rs []Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Topic + "-" + string(rune('0'+r.Partition))
	}
	return out
}

// open makes a session of the given partitions, each answered with high
// watermark hw, and returns its id.
func open(t *testing.T, c *Cache, version int16, hw int64, rs ...Request) int32 {
	t.Helper()
	f := c.Begin(version, 0, InitialEpoch, false, rs, nil, t0)
	res := make([]Result, len(rs))
	for i := range res {
		res[i] = Result{HighWatermark: hw, LogStartOffset: 0}
	}
	inc := f.Finish(res, t0)
	if f.SessionID == 0 || f.Incremental || slices.Contains(inc, false) {
		t.Fatalf("full fetch: session %d incremental %v include %v", f.SessionID, f.Incremental, inc)
	}
	return f.SessionID
}

func TestSessionlessAndFullFetch(t *testing.T) {
	c := NewCache(10)
	rs := []Request{req("a", 0, 0), req("a", 1, 5)}
	f := c.Begin(12, 0, FinalEpoch, false, rs, nil, t0)
	if got := keys(f.Partitions()); !slices.Equal(got, []string{"a-0", "a-1"}) {
		t.Fatalf("sessionless partitions %v", got)
	}
	f.Finish(make([]Result, 2), t0)
	if f.SessionID != 0 || c.Stats().Sessions != 0 {
		t.Fatalf("sessionless fetch made session %d (cache %+v)", f.SessionID, c.Stats())
	}
	id := open(t, c, 12, 10, rs...)
	if st := c.Stats(); st.Sessions != 1 || st.Partitions != 2 {
		t.Fatalf("after a full fetch: %+v", st)
	}
	// A full fetch naming an existing session closes it.
	f = c.Begin(12, id, FinalEpoch, false, rs, nil, t0)
	f.Finish(make([]Result, 2), t0)
	if st := c.Stats(); st.Sessions != 0 || st.Partitions != 0 {
		t.Fatalf("closing full fetch left %+v", st)
	}
}

func TestIncrementalFetch(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 10, req("a", 0, 0), req("a", 1, 0), req("b", 0, 0))

	// Epoch 1 names nothing: every cached partition is read, and only the
	// one with records or a new high watermark is answered.
	f := c.Begin(12, id, 1, false, nil, nil, t0.Add(time.Second))
	if f.ErrorCode != 0 || !f.Incremental || f.SessionID != id {
		t.Fatalf("incremental begin: %+v", f)
	}
	if got := keys(f.Partitions()); !slices.Equal(got, []string{"a-0", "a-1", "b-0"}) {
		t.Fatalf("incremental reads %v", got)
	}
	inc := f.Finish([]Result{{HighWatermark: 10}, {HighWatermark: 12}, {HighWatermark: 10, HasRecords: true}}, t0)
	if !slices.Equal(inc, []bool{false, true, true}) {
		t.Fatalf("include %v, want only the changed high watermark and the records", inc)
	}
	// Answered partitions moved to the back of the order.
	f = c.Begin(12, id, 2, false, []Request{req("a", 1, 12)}, []Key{{Topic: "b", Partition: 0}}, t0.Add(2*time.Second))
	if got := keys(f.Partitions()); !slices.Equal(got, []string{"a-0", "a-1"}) {
		t.Fatalf("after forgetting b-0: %v", got)
	}
	if p := f.Partitions()[1]; p.FetchOffset != 12 {
		t.Fatalf("updated fetch offset %d, want 12", p.FetchOffset)
	}
	// An error is answered, and the partition is answered again once the
	// error clears, even with an unchanged high watermark.
	inc = f.Finish([]Result{{ErrorCode: kerr.NotLeaderForPartition.Code, HighWatermark: 10}, {HighWatermark: 12}}, t0)
	if !slices.Equal(inc, []bool{true, false}) {
		t.Fatalf("include %v, want the error only", inc)
	}
	f = c.Begin(12, id, 3, false, nil, nil, t0.Add(3*time.Second))
	if got := keys(f.Partitions()); !slices.Equal(got, []string{"a-1", "a-0"}) {
		t.Fatalf("order %v, want the answered a-0 last", got)
	}
	if inc = f.Finish([]Result{{HighWatermark: 12}, {HighWatermark: 10}}, t0); !slices.Equal(inc, []bool{false, true}) {
		t.Fatalf("include %v after the error cleared, want a-0 only", inc)
	}
	if st := c.Stats(); st.Partitions != 2 {
		t.Fatalf("cached partitions %d, want 2", st.Partitions)
	}
}

func TestSessionErrors(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 0, req("a", 0, 0))
	cases := []struct {
		name    string
		version int16
		id      int32
		epoch   int32
		want    int16
	}{
		{"unknown session", 12, id + 1, 1, kerr.FetchSessionIDNotFound.Code},
		{"epoch from the future", 12, id, 2, kerr.InvalidFetchSessionEpoch.Code},
		{"topic ids on a session without", 13, id, 1, kerr.FetchSessionTopicIDError.Code},
	}
	for _, tc := range cases {
		f := c.Begin(tc.version, tc.id, tc.epoch, false, nil, nil, t0)
		if f.ErrorCode != tc.want || f.Partitions() != nil {
			t.Errorf("%s: error %d partitions %v, want %d", tc.name, f.ErrorCode, f.Partitions(), tc.want)
		}
	}
	// The right epoch works once; a replay of it is refused.
	if f := c.Begin(12, id, 1, false, nil, nil, t0); f.ErrorCode != 0 {
		t.Fatalf("epoch 1: %d", f.ErrorCode)
	}
	if f := c.Begin(12, id, 1, false, nil, nil, t0); f.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch 1: %d", f.ErrorCode)
	}
}

func TestForgettingEverythingClosesTheSession(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 13, 0, Request{Key: Key{TopicID: [16]byte{1}, Partition: 0}})
	f := c.Begin(13, id, 1, false, nil, []Key{{TopicID: [16]byte{1}, Partition: 0}}, t0)
	if f.Incremental || f.ErrorCode != 0 || len(f.Partitions()) != 0 {
		t.Fatalf("fetch forgetting the last partition: %+v", f)
	}
	f.Finish(nil, t0)
	if f.SessionID != 0 || c.Stats().Sessions != 0 {
		t.Fatalf("session kept: id %d, %+v", f.SessionID, c.Stats())
	}
}

func TestEviction(t *testing.T) {
	c := NewCache(2)
	small := open(t, c, 12, 0, req("a", 0, 0))
	big := open(t, c, 12, 0, req("b", 0, 0), req("b", 1, 0), req("b", 2, 0))

	// Full, and nothing old enough to give way: no session, and the fetch is
	// still answered.
	f := c.Begin(12, 0, InitialEpoch, false, []Request{req("c", 0, 0), req("c", 1, 0)}, nil, t0.Add(time.Minute))
	f.Finish(make([]Result, 2), t0.Add(time.Minute))
	if f.SessionID != 0 {
		t.Fatalf("a young cache gave way to session %d", f.SessionID)
	}
	// A follower's session evicts a consumer's at any age: the smallest.
	f = c.Begin(12, 0, InitialEpoch, true, []Request{req("d", 0, 0)}, nil, t0.Add(time.Minute))
	f.Finish(make([]Result, 1), t0.Add(time.Minute))
	if f.SessionID == 0 {
		t.Fatal("a follower's session did not evict a consumer's")
	}
	if g := c.Begin(12, small, 1, false, nil, nil, t0.Add(time.Minute)); g.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the smallest consumer session should be gone: %d", g.ErrorCode)
	}
	follower := f.SessionID

	// Past the eviction age, a bigger consumer session evicts a smaller,
	// older one, but never the follower's young one... which is also the
	// least recently used and stale after two minutes of silence.
	now := t0.Add(time.Minute + EvictionAge + time.Second)
	if g := c.Begin(12, big, 1, false, nil, nil, now); g.ErrorCode != 0 {
		t.Fatalf("big session: %d", g.ErrorCode)
	}
	f = c.Begin(12, 0, InitialEpoch, false, []Request{req("e", 0, 0), req("e", 1, 0), req("e", 2, 0), req("e", 3, 0)}, nil, now)
	f.Finish(make([]Result, 4), now)
	if f.SessionID == 0 {
		t.Fatal("no room made for a new session")
	}
	if g := c.Begin(12, follower, 1, true, nil, nil, now); g.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the stale follower session should have been evicted first: %d", g.ErrorCode)
	}
	if st := c.Stats(); st.Sessions != 2 || st.Evictions != 2 || st.Partitions != 7 {
		t.Fatalf("cache %+v, want 2 sessions of 3+4 partitions after 2 evictions", st)
	}
}

func TestCacheDisabled(t *testing.T) {
	c := NewCache(0)
	f := c.Begin(12, 0, InitialEpoch, false, []Request{req("a", 0, 0)}, nil, t0)
	f.Finish(make([]Result, 1), t0)
	if f.SessionID != 0 {
		t.Fatalf("a cache of 0 slots made session %d", f.SessionID)
	}
}

func TestNextEpoch(t *testing.T) {
	for _, tc := range [][2]int32{{0, 1}, {1, 2}, {1<<31 - 1, 1}, {-1, -1}} {
		if got := nextEpoch(tc[0]); got != tc[1] {
			t.Errorf("nextEpoch(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

// Two incremental fetches of one session in flight at once (a client that
// does not wait for its answer): the first to finish must not answer for,
// nor re-add, a partition the second forgot.
func TestFinishAfterALaterIncrementalFetchForgotAPartition(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 10, req("a", 0, 0), req("a", 1, 0))
	first := c.Begin(12, id, 1, false, nil, nil, t0)
	second := c.Begin(12, id, 2, false, nil, []Key{{Topic: "a", Partition: 1}}, t0)
	if first.ErrorCode != 0 || second.ErrorCode != 0 {
		t.Fatalf("errors %d, %d", first.ErrorCode, second.ErrorCode)
	}
	inc := first.Finish([]Result{{HighWatermark: 11}, {HighWatermark: 11}}, t0)
	if !slices.Equal(inc, []bool{true, false}) {
		t.Fatalf("first fetch included %v; want partition 0 (new high watermark) and not the forgotten 1", inc)
	}
	if got := keys(second.Partitions()); !slices.Equal(got, []string{"a-0"}) {
		t.Fatalf("second fetch reads %v", got)
	}
	if st := c.Stats(); st.Partitions != 1 || st.Incremental != 2 {
		t.Fatalf("cache %+v; want 1 partition after 2 incremental fetches", st)
	}
}

// Idle incremental fetches share one listing of the session; a fetch that
// names a partition, or an answer that moves one, lists it anew, in the
// new order and with the new parameters, while the listing a fetch still
// reading holds stays as it was. A listing no fetch reads any more lends
// its arrays to the next one, and takes a named partition's new
// parameters in place.
func TestIdleIncrementalFetchesShareTheListing(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 10, req("a", 0, 0), req("a", 1, 0), req("a", 2, 0))
	idle := []Result{{HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}}
	first := c.Begin(12, id, 1, false, nil, nil, t0)
	firstListed := &first.Partitions()[0]
	first.Finish(idle, t0)
	first.Release()
	second := c.Begin(12, id, 2, false, nil, nil, t0)
	if firstListed != &second.Partitions()[0] {
		t.Fatal("an idle incremental fetch copied the session's partitions again")
	}
	// Partition 1 gets records: answered, so moved to the back.
	if inc := second.Finish([]Result{{HighWatermark: 10}, {HighWatermark: 12, HasRecords: true}, {HighWatermark: 10}}, t0); !slices.Equal(inc, []bool{false, true, false}) {
		t.Fatalf("included %v", inc)
	}
	second.Release()
	third := c.Begin(12, id, 3, false, []Request{req("a", 1, 12)}, nil, t0)
	if got := keys(third.Partitions()); !slices.Equal(got, []string{"a-0", "a-2", "a-1"}) {
		t.Fatalf("after an answer moved a-1: reads %v", got)
	}
	if p := third.Partitions()[2]; p.FetchOffset != 12 {
		t.Fatalf("a-1 read from %d, want the named 12", p.FetchOffset)
	}
	if &third.Partitions()[0] == firstListed {
		t.Fatal("the listing in the new order was built in the arrays a fetch still read")
	}
	// A fetch overlapping third (a client sending before its answer came)
	// changes the listing; third, still reading, keeps its own.
	fourth := c.Begin(12, id, 4, false, []Request{req("a", 0, 5)}, nil, t0)
	if got := keys(third.Partitions()); !slices.Equal(got, []string{"a-0", "a-2", "a-1"}) || third.Partitions()[0].FetchOffset != 0 {
		t.Fatalf("the listing of a fetch still reading changed under it: %v", third.Partitions())
	}
	if &fourth.Partitions()[0] == &third.Partitions()[0] {
		t.Fatal("a new listing was built in the arrays a fetch still reads")
	}
	if p := fourth.Partitions()[0]; p.FetchOffset != 5 {
		t.Fatalf("a-0 read from %d, want the named 5", p.FetchOffset)
	}
	if &fourth.Partitions()[0] != firstListed {
		t.Fatal("the new listing did not reuse the arrays of the one no fetch reads any more")
	}
	// Finished but not released, third still reads its listing (its
	// answer is built from it): a new listing is not built in its arrays.
	third.Finish(idle, t0)
	fourth.Finish(idle, t0)
	fourth.Release()
	fifth := c.Begin(12, id, 5, false, []Request{req("a", 2, 7)}, nil, t0)
	if &fifth.Partitions()[0] == &third.Partitions()[0] {
		t.Fatal("a new listing was built in the arrays of a fetch finished but not released")
	}
	if got := keys(third.Partitions()); !slices.Equal(got, []string{"a-0", "a-2", "a-1"}) || third.Partitions()[1].FetchOffset != 0 {
		t.Fatalf("the listing of a finished fetch changed before its release: %v", third.Partitions())
	}
	if got := keys(fifth.Partitions()); !slices.Equal(got, []string{"a-0", "a-2", "a-1"}) || fifth.Partitions()[1].FetchOffset != 7 {
		t.Fatalf("fifth reads %v, want a-2 from the named 7", fifth.Partitions())
	}
	third.Release()
	fifth.Finish(idle, t0)
	fifth.Release()
}

// A partition's slot is the same across fetches and listings, as long as
// the session holds the partition, and a new one once it is forgotten and
// added again.
func TestSlotsFollowTheirPartitions(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 10, req("a", 0, 0), req("a", 1, 0))
	idle := []Result{{HighWatermark: 10}, {HighWatermark: 10}}
	f := c.Begin(12, id, 1, false, nil, nil, t0)
	if f.Slots() == nil || len(f.Slots()) != 2 {
		t.Fatalf("an incremental fetch has slots %v", f.Slots())
	}
	f.Slots()[0].Store("a-0")
	f.Slots()[1].Store("a-1")
	slot1 := f.Slots()[1]
	f.Finish([]Result{{HighWatermark: 11}, {HighWatermark: 10}}, t0) // a-0 moves to the back
	f = c.Begin(12, id, 2, false, nil, nil, t0)
	if f.Slots()[0] != slot1 || f.Slots()[0].Load() != "a-1" || f.Slots()[1].Load() != "a-0" {
		t.Fatalf("slots after a-0 moved: %v, %v", f.Slots()[0].Load(), f.Slots()[1].Load())
	}
	f.Finish(idle, t0)
	f = c.Begin(12, id, 3, false, nil, []Key{{Topic: "a", Partition: 1}}, t0)
	f.Finish(idle[:1], t0)
	f = c.Begin(12, id, 4, false, []Request{req("a", 1, 0)}, nil, t0)
	if len(f.Slots()) != 2 || f.Slots()[1] == slot1 || f.Slots()[1].Load() != nil || f.Slots()[0].Load() != "a-0" {
		t.Fatalf("a-1 forgotten and added again kept its slot")
	}
	f.Finish(idle, t0)
	if full := c.Begin(12, 0, FinalEpoch, false, []Request{req("a", 0, 0)}, nil, t0); full.Slots() != nil {
		t.Fatal("a sessionless fetch has slots")
	}
}

// A consumer's every fetch names the partitions whose offsets moved: their
// new parameters go into the listing no fetch reads any more, which the
// next fetch reads without the session being listed again.
func TestNamedPartitionsChangeTheListingInPlace(t *testing.T) {
	c := NewCache(10)
	id := open(t, c, 12, 10, req("a", 0, 0), req("a", 1, 0), req("a", 2, 0))
	idle := []Result{{HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}}
	first := c.Begin(12, id, 1, false, nil, nil, t0)
	listed := &first.Partitions()[0]
	first.Finish(idle, t0)
	first.Release()
	second := c.Begin(12, id, 2, false, []Request{req("a", 1, 4)}, nil, t0)
	if &second.Partitions()[0] != listed {
		t.Fatal("a fetch naming a partition of its session listed the session again")
	}
	if got := keys(second.Partitions()); !slices.Equal(got, []string{"a-0", "a-1", "a-2"}) || second.Partitions()[1].FetchOffset != 4 {
		t.Fatalf("second reads %v, want a-1 from the named 4", second.Partitions())
	}
	// While second reads it, the listing is not changed under it.
	third := c.Begin(12, id, 3, false, []Request{req("a", 2, 6)}, nil, t0)
	if second.Partitions()[2].FetchOffset != 0 || third.Partitions()[2].FetchOffset != 6 {
		t.Fatalf("second reads %v, third %v", second.Partitions(), third.Partitions())
	}
	second.Finish(idle, t0)
	second.Release()
	third.Finish(idle, t0)
	third.Release()
}
