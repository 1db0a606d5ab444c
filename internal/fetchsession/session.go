// Package fetchsession keeps the incremental fetch sessions of KIP-227.
//
// A consumer (or a follower) fetching many partitions would otherwise send
// every partition in every Fetch and get every partition back, changed or
// not. With a session, the first (full) fetch names the partitions and the
// broker remembers them under a session id; later (incremental) fetches name
// only the partitions whose fetch parameters changed, plus those to forget,
// and the answer holds only the partitions with something to say: records,
// a new high watermark or log start offset, or an error.
//
// The rules follow Kafka's FetchManager and FetchSessionCache:
//
//   - session id 0, epoch -1: a sessionless full fetch;
//   - session id 0, epoch 0: a full fetch that asks for a new session (the
//     answer names it, or 0 when the cache has no room);
//   - session id N, epoch -1 (or 0): close session N, then as above;
//   - session id N, epoch E > 0: an incremental fetch of session N, which
//     must expect epoch E (else INVALID_FETCH_SESSION_EPOCH; an unknown N is
//     FETCH_SESSION_ID_NOT_FOUND); a session whose partitions were all
//     forgotten is closed and the fetch answered as a sessionless one;
//   - a session made with topic ids (Fetch v13+) only serves requests with
//     topic ids, and one made without them only requests without
//     (FETCH_SESSION_TOPIC_ID_ERROR).
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions; a new one may evict an old one that is stale (unused for two
// minutes), or, past that, one that is worth less: a follower's session
// outranks a consumer's, and a bigger session a smaller one that is more
// than two minutes old.
package fetchsession

import (
	"container/list"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	InitialEpoch int32 = 0  // a full fetch asking for a new session
	FinalEpoch   int32 = -1 // a full fetch without (or closing) a session
)

// EvictionAge is how long a session must be unused to be stale, and how old
// one must be before a bigger session may take its slot (Kafka's fixed
// two minutes).
const EvictionAge = 2 * time.Minute

// Key names a partition of a session: by topic id from Fetch v13 on (Topic
// is then empty), by topic name before (TopicID is zero).
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Params are one partition's fetch parameters, as a request gives them and
// as a session remembers them for the fetches that leave them out.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64 // a follower's log start offset; -1 from consumers
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Request is one partition of a Fetch request.
type Request struct {
	Key
	Params
}

// Result is what a fetch found for one partition: the fields that decide
// whether an incremental answer must include it.
type Result struct {
	ErrorCode        int16
	HighWatermark    int64
	LogStartOffset   int64
	HasRecords       bool
	DivergingEpoch   bool // a follower must truncate
	PreferredReplica bool // a follower to read from was named (KIP-392)
}

// cached is a partition of a session: its last parameters and what the last
// answer that included it said.
type cached struct {
	// First, side by side: what every fetch of the session reads of each
	// of its partitions (the slot) and writes (the answer's offsets); the
	// parameters are read from the listing's copy.
	slot           Slot
	highWatermark  int64 // -1 after an error, so the next answer includes it
	logStartOffset int64
	Request
	at int // its index in the session's listing (listed), while there is one
}

// Slot is where the reader of a session keeps, for one of its partitions,
// what reading the partition needs (its log and leader state, resolved
// once), so that each incremental fetch need not look every partition up
// again. The session only holds it, as long as it holds the partition:
// what is in it, and when that is stale, is the reader's to say. Safe for
// concurrent use: two fetches of one session may overlap.
type Slot struct{ v atomic.Value }

// Load is what the last Store put, nil before any.
func (s *Slot) Load() any { return s.v.Load() }

// Store replaces what the slot holds; every Store of a slot must pass the
// same concrete type.
func (s *Slot) Store(v any) { s.v.Store(v) }

// listing is a session's order as Begin hands it to a fetch: the requests,
// their elements and their slots, built once and kept while nothing
// changes (an idle consumer's incremental fetches name no partition and
// move none, and would otherwise copy 1,000 partitions out of the list
// each time). Never changed while a fetch reads it (users > 0): a dropped
// listing nobody reads becomes the session's spare, whose arrays the next
// listing reuses, so that a consumer whose every fetch moves a few
// partitions does not allocate the whole listing each time.
type listing struct {
	reqs  []Request
	elems []*list.Element
	slots []*Slot
	users int // fetches between their Begin and Finish
}

// session is one cached fetch session. Its fields are guarded by the
// cache's mutex.
type session struct {
	id           int32
	epoch        int32 // the epoch the next incremental fetch must carry
	privileged   bool  // a follower's
	usesTopicIDs bool
	created      time.Time
	lastUsed     time.Time

	order *list.List // of *cached, the order partitions are fetched in
	index map[Key]*list.Element

	// listed is order as fetches read it (nil once order or a partition's
	// parameters changed); spare is a dropped listing no fetch reads.
	listed, spare *listing

	// Set when the session was last touched, as Kafka's trees are: whether
	// any new session, or only a privileged one, may evict it, and the
	// partitions it counted for in the cache's total.
	evictableByAll, evictableByPrivileged bool
	counted                               int
}

// Cache is a broker's fetch sessions. Safe for concurrent use.
type Cache struct {
	max int

	mu         sync.Mutex
	sessions   map[int32]*session
	partitions int
	evictions  uint64
	// incremental counts the incremental fetches served, so operators (and
	// tests) can see clients reusing their sessions.
	incremental uint64
}

// NewCache holds at most maxSessions sessions (0 disables sessions: every
// full fetch is answered without one, as Kafka does).
func NewCache(maxSessions int) *Cache {
	return &Cache{max: maxSessions, sessions: map[int32]*session{}}
}

// Stats is what the cache holds, for metrics.
type Stats struct {
	Sessions, Partitions int
	Evictions            uint64
	Incremental          uint64 // incremental fetches that found their session
}

// Stats reports the cache's size and evictions so far.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.partitions, Evictions: c.evictions, Incremental: c.incremental}
}

// Fetch is one Fetch request's view of its session: which partitions to
// read, and, once read, which to answer with and under which session id.
type Fetch struct {
	cache       *Cache
	kind        kind
	version     int16
	follower    bool
	sess        *session // incremental only
	listing     *listing // incremental only: what Begin handed out
	elems       []*list.Element
	epoch       int32     // sess.epoch once Begin moved it on
	requested   []Request // full and sessionless: the request's partitions
	partitions  []Request // what to read, in order
	ErrorCode   int16     // a session error: answer with it and no partitions
	SessionID   int32     // the id the answer carries (after Finish for a full fetch)
	Incremental bool
}

type kind int8

const (
	sessionless kind = iota
	full
	incremental
	sessionError
)

// Begin starts a Fetch: version is the request's, sessionID and epoch its
// session fields, partitions its partitions in request order, forgotten its
// forgotten topics' partitions (incremental fetches only), follower whether
// a replica asks. An incremental fetch updates its session here (added,
// changed and forgotten partitions) and moves the session to its next
// epoch, so a second request with the same epoch is refused.
func (c *Cache) Begin(version int16, sessionID, epoch int32, follower bool, partitions []Request, forgotten []Key, now time.Time) *Fetch {
	f := &Fetch{cache: c, version: version, follower: follower}
	if epoch == InitialEpoch || epoch == FinalEpoch {
		if sessionID != 0 {
			c.mu.Lock()
			if s := c.sessions[sessionID]; s != nil {
				c.removeLocked(s)
			}
			c.mu.Unlock()
		}
		f.kind, f.requested, f.partitions = full, partitions, partitions
		if epoch == FinalEpoch || c.max == 0 {
			f.kind = sessionless
		}
		return f
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionID]
	switch {
	case s == nil:
		f.kind, f.ErrorCode = sessionError, kerr.FetchSessionIDNotFound.Code
		return f
	case s.epoch != epoch:
		f.kind, f.ErrorCode = sessionError, kerr.InvalidFetchSessionEpoch.Code
		return f
	case s.usesTopicIDs != (version >= 13):
		f.kind, f.ErrorCode = sessionError, kerr.FetchSessionTopicIDError.Code
		return f
	}
	// A consumer's fetch names the partitions its last answer moved on (new
	// fetch offsets): their parameters change in the listing too, in place
	// while no fetch reads it, so that the next fetch need not list the
	// whole session again. Any other change lists it anew.
	changed := len(forgotten) > 0
	for _, r := range partitions {
		if e := s.index[r.Key]; e != nil {
			cp := e.Value.(*cached)
			cp.Params = r.Params
			if l := s.listed; l != nil && l.users == 0 {
				l.reqs[cp.at].Params = r.Params
			} else {
				changed = true
			}
			continue
		}
		s.index[r.Key] = s.order.PushBack(&cached{Request: r, highWatermark: -1, logStartOffset: -1})
		changed = true
	}
	if changed {
		s.dropListing()
	}
	for _, k := range forgotten {
		if e := s.index[k]; e != nil {
			s.order.Remove(e)
			delete(s.index, k)
		}
	}
	if s.order.Len() == 0 {
		// Nothing left to remember: Kafka closes the session and answers as a
		// sessionless fetch (of nothing).
		c.removeLocked(s)
		f.kind = sessionless
		return f
	}
	c.touchLocked(s, now)
	c.incremental++
	s.epoch = nextEpoch(s.epoch)
	f.kind, f.sess, f.SessionID, f.Incremental = incremental, s, s.id, true
	f.epoch = s.epoch
	if s.listed == nil {
		s.listed = s.newListing()
	}
	s.listed.users++
	f.listing = s.listed
	f.partitions, f.elems = s.listed.reqs, s.listed.elems
	return f
}

// newListing lists order, in the spare listing's arrays if there is one.
// Caller holds the cache's mutex.
func (s *session) newListing() *listing {
	l := s.spare
	s.spare = nil
	if l == nil {
		l = &listing{}
	}
	n := s.order.Len()
	l.reqs, l.elems, l.slots = slices.Grow(l.reqs[:0], n), slices.Grow(l.elems[:0], n), slices.Grow(l.slots[:0], n)
	for e := s.order.Front(); e != nil; e = e.Next() {
		cp := e.Value.(*cached)
		cp.at = len(l.reqs)
		l.reqs = append(l.reqs, cp.Request)
		l.elems = append(l.elems, e)
		l.slots = append(l.slots, &cp.slot)
	}
	return l
}

// dropListing forgets the listing of order, about to change. Caller holds
// the cache's mutex.
func (s *session) dropListing() {
	if s.listed != nil && s.listed.users == 0 {
		s.spare = s.listed
	}
	s.listed = nil
}

// Release ends f's use of its session's listing (Partitions and Slots of
// an incremental fetch), once its answer is built: one no longer current
// and no longer read becomes the session's spare, whose arrays the next
// listing reuses. Nil-safe, and a no-op after the first call and for
// fetches other than incremental ones.
func (f *Fetch) Release() {
	if f == nil || f.listing == nil {
		return
	}
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	f.release()
}

// release is Release with the cache's mutex held.
func (f *Fetch) release() {
	l := f.listing
	f.listing = nil
	if l == nil {
		return
	}
	if l.users--; l.users == 0 && l != f.sess.listed {
		f.sess.spare = l
	}
}

// Partitions are the partitions to read, in the order to read them: the
// request's for a full fetch, every partition of the session for an
// incremental one. Valid until Release.
func (f *Fetch) Partitions() []Request { return f.partitions }

// Slots are the session's slots of Partitions (Slots()[i] for
// Partitions()[i]) for an incremental fetch, nil for others. Valid until
// Release; a slot itself lives as long as its partition stays in the
// session.
func (f *Fetch) Slots() []*Slot {
	if f.listing == nil {
		return nil
	}
	return f.listing.slots
}

// Finish takes the results of reading Partitions (results[i] for
// Partitions()[i]) and reports which to include in the answer. A full fetch
// includes them all and, if it asked for a session and the cache has room,
// creates one holding them (SessionID is set). An incremental fetch includes
// a partition with records, an error, a changed high watermark or log start
// offset, a diverging epoch or a preferred replica, and moves the included
// ones to the back of the session's order, so partitions that had to wait
// for room in one answer come first in the next. Partitions stay valid,
// for building the answer, until Release.
func (f *Fetch) Finish(results []Result, now time.Time) (include []bool) {
	include = make([]bool, len(results))
	switch f.kind {
	case sessionError:
		return include
	case sessionless:
		for i := range include {
			include[i] = true
		}
		return include
	case full:
		for i := range include {
			include[i] = true
		}
		f.SessionID = f.cache.create(f, results, now)
		return include
	}
	c, s := f.cache, f.sess
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.id] != s {
		// Evicted or closed while this fetch read: answer everything read
		// this time; the next incremental fetch learns the session is gone.
		for i := range include {
			include[i] = true
		}
		return include
	}
	// Unless another incremental fetch of the session began meanwhile (and
	// may have forgotten partitions), the elements Begin listed are still
	// the session's: no need to look each one up again.
	current := s.epoch == f.epoch
	for i, r := range results {
		e := f.elems[i]
		if !current {
			if e = s.index[f.partitions[i].Key]; e == nil { // forgotten meanwhile
				continue
			}
		}
		cp := e.Value.(*cached)
		if cp.mustAnswer(r) {
			include[i] = true
			s.dropListing()
			s.order.MoveToBack(e)
		}
	}
	if s.listed == nil {
		// Listed now, in the new order, rather than by the next fetch:
		// this fetch has just read every partition of the session, so
		// they are in the processor's cache now, and by the next fetch
		// they may well not be.
		s.listed = s.newListing()
	}
	return include
}

// mustAnswer reports whether r must be in an incremental answer, and
// remembers what the answer tells the fetcher (Kafka's
// CachedPartition.maybeUpdateResponseData).
func (cp *cached) mustAnswer(r Result) bool {
	must := r.HasRecords || r.PreferredReplica || r.DivergingEpoch
	if cp.highWatermark != r.HighWatermark {
		must = true
		cp.highWatermark = r.HighWatermark
	}
	if cp.logStartOffset != r.LogStartOffset {
		must = true
		cp.logStartOffset = r.LogStartOffset
	}
	if r.ErrorCode != 0 {
		// An error is always answered; forgetting the high watermark makes the
		// partition answered again once the error is gone.
		must = true
		cp.highWatermark = -1
	}
	return must
}

// create makes a session of a full fetch's partitions and results, if there
// is room or an entry it may evict; it returns the session id, 0 if none.
func (c *Cache) create(f *Fetch, results []Result, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := len(f.requested)
	if len(c.sessions) >= c.max && !c.evictForLocked(f.follower, size, now) {
		return 0
	}
	s := &session{
		id: c.newIDLocked(), epoch: nextEpoch(InitialEpoch), privileged: f.follower,
		usesTopicIDs: f.version >= 13, created: now,
		order: list.New(), index: make(map[Key]*list.Element, size),
	}
	for i, r := range f.requested {
		if s.index[r.Key] != nil { // a partition named twice is cached once
			continue
		}
		cp := &cached{Request: r, highWatermark: results[i].HighWatermark, logStartOffset: results[i].LogStartOffset}
		if results[i].ErrorCode != 0 {
			cp.highWatermark = -1
		}
		s.index[r.Key] = s.order.PushBack(cp)
	}
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return s.id
}

// evictForLocked makes room for a new session of size partitions, as
// Kafka's tryEvict: the least recently used session if it is stale, else
// the least valuable one the newcomer may evict, if the newcomer is worth
// at least as much.
func (c *Cache) evictForLocked(privileged bool, size int, now time.Time) bool {
	var oldest, cheapest *session
	for _, s := range c.sessions {
		if oldest == nil || s.lastUsed.Before(oldest.lastUsed) || (s.lastUsed.Equal(oldest.lastUsed) && s.id < oldest.id) {
			oldest = s
		}
		eligible := s.evictableByAll
		if privileged {
			eligible = s.evictableByPrivileged
		}
		if eligible && (cheapest == nil || less(s.privileged, s.order.Len(), s.id, cheapest.privileged, cheapest.order.Len(), cheapest.id)) {
			cheapest = s
		}
	}
	switch {
	case oldest == nil:
		return false
	case now.Sub(oldest.lastUsed) > EvictionAge:
		c.removeLocked(oldest)
	case cheapest == nil || less(privileged, size, 0, cheapest.privileged, cheapest.order.Len(), cheapest.id):
		return false
	default:
		c.removeLocked(cheapest)
	}
	c.evictions++
	return true
}

// less orders sessions by worth, as Kafka's EvictableKey: a consumer's
// below a follower's, then by partitions, then by id.
func less(aPriv bool, aSize int, aID int32, bPriv bool, bSize int, bID int32) bool {
	if aPriv != bPriv {
		return !aPriv
	}
	if aSize != bSize {
		return aSize < bSize
	}
	return aID < bID
}

// touchLocked marks s used now and recomputes who may evict it: anyone once
// it is older than EvictionAge; a follower's session also, at any age, if s
// is a consumer's.
func (c *Cache) touchLocked(s *session, now time.Time) {
	s.lastUsed = now
	old := now.Sub(s.created) > EvictionAge
	s.evictableByAll = old
	s.evictableByPrivileged = old || !s.privileged
	c.partitions += s.order.Len() - s.counted
	s.counted = s.order.Len()
}

func (c *Cache) removeLocked(s *session) {
	delete(c.sessions, s.id)
	c.partitions -= s.counted
	s.counted = 0
}

// newIDLocked is a random positive id no live session has.
func (c *Cache) newIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32) + 1
		if c.sessions[id] == nil {
			return id
		}
	}
}

// nextEpoch is the epoch after e: 1 after the largest, and never back to
// the initial or final epoch.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}
