package quota

import (
	"hash/maphash"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SubquotaMode is client.quota.subquota.mode.
type SubquotaMode int

const (
	// Independent is Apache Kafka's behaviour: a connection uses the single
	// most specific level that sets a key, and shares it only as that level
	// says (package doc).
	Independent SubquotaMode = iota
	// Reserved is kbroker's own extension, not in Apache Kafka: a user's
	// quota is a hard total; (user, client-id) sub-quotas are reserved out of it and the
	// user's other clients share the remainder.
	Reserved
)

// Options configure a Manager. Zero values mean the defaults noted.
type Options struct {
	Mode SubquotaMode
	// Static defaults from server.properties (0 = unlimited):
	// quota.user.producer.default, quota.user.consumer.default,
	// quota.producer.default, quota.consumer.default. Each sits just below
	// the matching dynamic <default> entity (package doc).
	UserProducerDefault, UserConsumerDefault, ClientProducerDefault, ClientConsumerDefault float64
	Window                                                                                 time.Duration // quota.window.size.seconds; 1 s
	Samples                                                                                int           // quota.window.num; 11 (controller mutation burst = Samples × Window)
	// Registerer receives the per-entity metrics; nil: no metrics.
	Registerer prometheus.Registerer
	Now        func() time.Time // clock; nil: time.Now
	// IdleTTL is how long an entity may go unused before its state and
	// metric series are dropped (Kafka: 3600 s); 0: 1 h.
	IdleTTL time.Duration
	// ExpireEvery is how often record calls start a background sweep of idle
	// entities; 0: min(IdleTTL/4, 1 min); < 0: never (call ExpireIdle).
	ExpireEvery time.Duration
}

// Manager measures usage against quotas and computes throttle times. It is
// safe for concurrent use.
type Manager struct {
	opts        Options
	window      float64 // seconds
	samples     float64
	ttl         int64 // ns
	expireEvery int64 // ns; 0: no automatic sweeps
	touchEvery  int64 // ns: granularity of last-use stamps
	base        time.Time

	cur     atomic.Pointer[generation]
	setMu   sync.Mutex // serialises SetOverrides so epochs only grow
	prev    Overrides  // what cur was built from (guarded by setMu)
	derived int        // SetOverrides calls served by derive (tests)

	seed   maphash.Seed
	shards [64]bindShard

	sensorsMu sync.Mutex
	sensors   map[sensorKey]*sensor

	ipMu sync.Mutex
	ips  map[netip.Addr]*sensor

	metrics   *metrics // nil: no metrics
	lastSweep atomic.Int64
}

type bindKey struct{ user, client string }

// binding is what one (user, client-id) resolves to under one generation: the
// sensor of each quota type (nil: unlimited). Immutable but for lastUse; a
// new generation replaces it on first use.
type binding struct {
	gen     *generation
	s       [numKeys]*sensor
	lastUse atomic.Int64
}

type bindShard struct {
	mu sync.RWMutex
	m  map[bindKey]*binding
	_  [32]byte // keep hot locks on separate cache lines
}

// sensorKey identifies a shared measurement: Kafka's (quota type, metric
// tags), plus the kind so that user "" and client-id "" cannot collide.
type sensorKey struct {
	k            keyID
	kind         sensorKind
	user, client string
}

type sensor struct {
	mu      sync.Mutex
	b       bucket
	epoch   uint64 // generation whose limit b holds
	lastUse atomic.Int64
	dead    atomic.Bool // expired: bindings holding it must re-resolve
	met     *sensorMetrics
}

// New returns a Manager with no overrides (only the static defaults apply).
func New(opts Options) *Manager {
	if opts.Window <= 0 {
		opts.Window = time.Second
	}
	if opts.Samples <= 0 {
		opts.Samples = 11
	}
	if opts.IdleTTL <= 0 {
		opts.IdleTTL = time.Hour
	}
	if opts.ExpireEvery == 0 {
		opts.ExpireEvery = min(opts.IdleTTL/4, time.Minute)
	}
	m := &Manager{
		opts:       opts,
		window:     opts.Window.Seconds(),
		samples:    float64(opts.Samples),
		ttl:        int64(opts.IdleTTL),
		touchEvery: int64(min(time.Second, opts.IdleTTL/8)),
		seed:       maphash.MakeSeed(),
		sensors:    map[sensorKey]*sensor{},
		ips:        map[netip.Addr]*sensor{},
	}
	if opts.ExpireEvery > 0 {
		m.expireEvery = int64(opts.ExpireEvery)
	}
	if opts.Now != nil {
		m.base = opts.Now()
	} else {
		m.base = time.Now()
	}
	for i := range m.shards {
		m.shards[i].m = map[bindKey]*binding{}
	}
	if opts.Registerer != nil {
		m.metrics = newMetrics(opts.Registerer)
	}
	m.cur.Store(compile(nil, &m.opts, 1))
	return m
}

// SetOverrides installs a new full set of overrides. Every connection's
// next record call re-resolves against it, so a change applies at once;
// a sensor whose entity is unchanged keeps its accumulated usage (only its
// rate and burst change). Invalid paths, keys and values are ignored:
// callers validate with ValidateChanges or ValidateOverrides before
// storing. Pass maps the previous call also had for unchanged entities
// (as the metadata store's snapshots do) to get the incremental path.
func (m *Manager) SetOverrides(o Overrides) {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	prev := m.cur.Load()
	c := prev.derive(o, m.prev, prev.epoch+1)
	if c == nil {
		c = compile(o, &m.opts, prev.epoch+1)
	} else {
		m.derived++
	}
	c.at = m.nanos()
	m.prev = o
	m.cur.Store(c)
	m.settle(c, nil)
}

// ApplyChanges installs o, the full set of overrides after a change that
// touched only the entities in changed (whose new values are in o; absent:
// removed), as the metadata store reports each committed change. Unlike
// SetOverrides it never compares o with the previous set, so it costs what
// the changed entities cost however many others there are.
func (m *Manager) ApplyChanges(o Overrides, changed []string) {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	prev := m.cur.Load()
	var c *generation
	if m.prev != nil && len(changed) <= maxDerived {
		changes := make(map[string]map[string]float64, len(changed))
		for _, path := range changed {
			changes[path] = o[path] // nil: removed
		}
		c = prev.with(changes, prev.epoch+1)
		m.derived++
	} else {
		c = compile(o, &m.opts, prev.epoch+1)
	}
	c.at = m.nanos()
	m.prev = o
	m.cur.Store(c)
	m.settle(c, touchedBy(changed))
}

// settle moves the live bindings that c may change onto it now, at c.at.
// Left to their next record call, an idle client's sensors would skip
// every generation between, and settle all the time since the last one they
// applied at that one's rate: a quota raised and lowered again while the
// client waited out a throttle would bill the raised period at the low
// rate. Settling at each change integrates the limit actually in force.
// affected nil: every binding.
func (m *Manager) settle(c *generation, affected func(user, client string) bool) {
	var stale []*binding
	var keys []bindKey
	for i := range m.shards {
		sh := &m.shards[i]
		stale, keys = stale[:0], keys[:0]
		sh.mu.RLock()
		for k, b := range sh.m {
			if b.gen.epoch < c.epoch && (affected == nil || affected(k.user, k.client)) {
				stale, keys = append(stale, b), append(keys, k)
			}
		}
		sh.mu.RUnlock()
		for j, k := range keys {
			nb := m.rebind(c, sh, k.user, k.client, c.at)
			// Settling is not use: keep the idle clock running for expiry.
			nb.lastUse.Store(stale[j].lastUse.Load())
		}
	}
}

// touchedBy tells which bindings a change of the entities at paths can
// move: those naming a changed user or client-id, or all of them once a
// default entity (or a path that does not parse) is among the changes.
func touchedBy(paths []string) func(user, client string) bool {
	users, clients := map[string]bool{}, map[string]bool{}
	for _, p := range paths {
		e, err := parseEntity(p)
		switch {
		case err != nil || e.defUser || e.defClient:
			return nil
		case e.hasIP && !e.hasUser && !e.hasClient:
			continue // ip entities have their own sensors
		}
		if e.hasUser {
			users[e.user] = true
		}
		if e.hasClient {
			clients[e.client] = true
		}
	}
	return func(user, client string) bool { return users[user] || clients[client] }
}

// Resolve returns the effective limit of key for (user, clientID) and every
// precedence level that has a value, in the mode's precedence order (first
// = the effective one). In reserved mode a client sharing its user's total
// gets the remainder after reservations as limit, while levels[0].Value is
// the configured total. ok=false: unlimited.
func (m *Manager) Resolve(user, clientID, key string) (limit float64, levels []Level, ok bool) {
	k, known := keyByName(key)
	if !known {
		return 0, nil, false
	}
	c := m.cur.Load()
	r := c.resolve(user, clientID, k)
	if !r.ok {
		return 0, nil, false
	}
	return r.limit, c.levels(user, clientID, k), true
}

// ResolveIP is Resolve for connection_creation_rate: ips/<ip>, then
// ips/<default>.
func (m *Manager) ResolveIP(ip string) (limit float64, levels []Level, ok bool) {
	c := m.cur.Load()
	if a, valid := parseIP(ip); valid {
		if v, ok := c.ips[a]; ok {
			levels = append(levels, Level{Path: IPPath(&ip), Value: v})
		}
	}
	if c.defIP > 0 {
		levels = append(levels, Level{Path: IPPath(nil), Value: c.defIP})
	}
	if len(levels) == 0 {
		return 0, nil, false
	}
	return levels[0].Value, levels, true
}

func (m *Manager) nanos() int64 {
	if m.opts.Now != nil {
		return m.opts.Now().Sub(m.base).Nanoseconds()
	}
	return int64(time.Since(m.base))
}

// sensorFor finds the sensor of key k for (user, client), or nil when that
// key is unlimited for them. The steady path is an atomic load, one read-
// locked map lookup with a struct key (no allocation) and two stamps.
func (m *Manager) sensorFor(k keyID, user, client string) (*sensor, int64) {
	c := m.cur.Load()
	if !c.enabled[k] {
		return nil, 0
	}
	sh := &m.shards[m.shardOf(user, client)]
	sh.mu.RLock()
	b := sh.m[bindKey{user, client}]
	sh.mu.RUnlock()
	now := m.nanos()
	if b == nil || b.gen != c || b.s[k] != nil && b.s[k].dead.Load() {
		b = m.rebind(c, sh, user, client, now)
	}
	s := b.s[k]
	if s == nil {
		return nil, 0
	}
	m.touch(&b.lastUse, now)
	m.touch(&s.lastUse, now)
	m.maybeSweep(now)
	return s, now
}

func (m *Manager) shardOf(user, client string) int {
	h := maphash.String(m.seed, user) ^ maphash.String(m.seed, client)*0x9E3779B97F4A7C15
	return int(h % uint64(len(m.shards)))
}

func (m *Manager) touch(stamp *atomic.Int64, now int64) {
	if now-stamp.Load() >= m.touchEvery {
		stamp.Store(now)
	}
}

// rebind resolves (user, client) against c: the slow path, once per
// connection identity per config generation.
func (m *Manager) rebind(c *generation, sh *bindShard, user, client string, now int64) *binding {
	user, client = strings.Clone(user), strings.Clone(client) // don't pin request buffers
	nb := &binding{gen: c}
	nb.lastUse.Store(now)
	for k := range numKeys {
		r := c.resolve(user, client, k)
		if !r.ok {
			continue
		}
		key := sensorKey{k: k, kind: r.kind}
		switch r.kind {
		case kindPair:
			key.user, key.client = user, client
		case kindUser:
			key.user = user
		case kindClient:
			key.client = client
		}
		nb.s[k] = m.sensor(key, r.limit, c, now)
	}
	bk := bindKey{user, client}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.m[bk]; old != nil && old.gen.epoch > c.epoch {
		return old // a newer generation won the race
	}
	sh.m[bk] = nb
	return nb
}

// sensor returns the sensor for key, created full or updated to limit. Two
// connections resolving the same key under one generation always compute the
// same limit (a key's level is a function of the names it carries), so the
// epoch check is enough to apply each change once.
func (m *Manager) sensor(key sensorKey, limit float64, c *generation, now int64) *sensor {
	m.sensorsMu.Lock()
	s := m.sensors[key]
	if s == nil {
		burst, floor := m.shape(key.k, limit)
		s = &sensor{b: newBucket(limit, burst, floor, now), epoch: c.epoch}
		s.lastUse.Store(now)
		if m.metrics != nil {
			s.met = m.metrics.forSensor(key)
			s.met.limit.Set(limit)
		}
		m.sensors[key] = s
		m.sensorsMu.Unlock()
		return s
	}
	m.sensorsMu.Unlock()
	s.setLimit(limit, c, now)
	return s
}

// setLimit moves s to c's limit: usage up to the change is settled at the
// old rate, the time since at the new one.
func (s *sensor) setLimit(limit float64, c *generation, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.epoch <= s.epoch {
		return
	}
	s.epoch = c.epoch
	if limit != s.b.rate {
		s.b.setRate(limit, min(c.at, now))
		s.b.refill(now)
		if s.met != nil {
			s.met.limit.Set(limit)
		}
	}
}

// shape gives a quota type's burst and debt floor, in seconds of its rate
// (package doc, "Measurement").
func (m *Manager) shape(k keyID, rate float64) (burstSec, floorSec float64) {
	switch k {
	case kRequest:
		return m.window, m.samples * m.window
	case kMutation:
		return m.samples * m.window, math.Inf(1)
	case kConnection:
		return max(m.window/2, 1/rate), 0
	}
	return m.window, math.Inf(1)
}

// kConnection extends keyID for the ip sensors (not part of bindings).
const kConnection = numKeys

func (m *Manager) observe(s *sensor, k keyID, v float64, t time.Duration) {
	if s.met == nil {
		return
	}
	if v > 0 {
		s.met.usage.Add(v)
	}
	if t > 0 {
		s.met.throttle.Add(t.Seconds())
		m.metrics.throttled[k].Inc()
	}
}

// RecordProduce records a Produce request's size against the connection's
// producer_byte_rate and returns the throttle: the request is accepted, the
// response carries the throttle and the connection is muted for it (KIP-219).
func (m *Manager) RecordProduce(user, clientID string, bytes int) time.Duration {
	return m.record(kProduce, user, clientID, float64(max(bytes, 0)), maxThrottle)
}

// record takes v from the (user, client) sensor of k and returns the
// throttle that pays back the debt it leaves, at most limit.
func (m *Manager) record(k keyID, user, client string, v float64, limit time.Duration) time.Duration {
	s, now := m.sensorFor(k, user, client)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	after := s.b.take(now, v)
	rate := s.b.rate
	s.mu.Unlock()
	t := throttleFor(-after, rate, limit)
	m.observe(s, k, v, t)
	return t
}

// RecordFetch records a Fetch response's size against consumer_byte_rate.
// A fetch is served when the bucket holds min(bytes, burst): throttle 0.
// Otherwise the throttle is the time until it will, and the caller answers
// with no data and calls UnrecordFetch (Kafka's un-record). Because a fetch
// never needs more than a full bucket, a response bigger than the burst
// (one record batch over FetchByteCap) is served rather than starved.
func (m *Manager) RecordFetch(user, clientID string, bytes int) time.Duration {
	s, now := m.sensorFor(kFetch, user, clientID)
	if s == nil {
		return 0
	}
	v := float64(max(bytes, 0))
	s.mu.Lock()
	s.b.refill(now)
	before, need, rate := s.b.tokens, min(v, s.b.capacity), s.b.rate
	s.b.take(now, v)
	s.mu.Unlock()
	var t time.Duration
	if before < need {
		t = max(throttleFor(need-before, rate, maxThrottle), time.Millisecond)
	}
	if t == 0 {
		m.observe(s, kFetch, v, 0)
	} else {
		m.observe(s, kFetch, 0, t)
	}
	return t
}

// UnrecordFetch gives back the bytes of a fetch that RecordFetch throttled.
func (m *Manager) UnrecordFetch(user, clientID string, bytes int) {
	s, now := m.sensorFor(kFetch, user, clientID)
	if s == nil || bytes <= 0 {
		return
	}
	s.mu.Lock()
	s.b.give(now, float64(bytes))
	s.mu.Unlock()
}

// FetchByteCap is the largest fetch response to build for the connection:
// one burst (consumer_byte_rate × window), so a response always fits in a
// full bucket (KAFKA-9677, where Kafka uses quota × (samples−1) × window
// for its sampled rate). math.MaxInt64 when unlimited.
func (m *Manager) FetchByteCap(user, clientID string) int64 {
	s, _ := m.sensorFor(kFetch, user, clientID)
	if s == nil {
		return math.MaxInt64
	}
	s.mu.Lock()
	c := s.b.capacity
	s.mu.Unlock()
	if !(c < math.MaxInt64) {
		return math.MaxInt64
	}
	return max(1, int64(c))
}

// RecordRequestTime records handler thread time d against
// request_percentage (d as percent-seconds of one thread: Kafka's
// nanos × 100 / 1e9) and returns the throttle, capped at one window as in
// Kafka.
func (m *Manager) RecordRequestTime(user, clientID string, d time.Duration) time.Duration {
	return m.record(kRequest, user, clientID, max(d.Seconds(), 0)*100, m.opts.Window)
}

// CheckMutations is the strict-mode check before a CreateTopics /
// CreatePartitions / DeleteTopics operation (KIP-599): ok=false (answer
// THROTTLING_QUOTA_EXCEEDED with throttle) while the bucket is in debt.
// An operation that fits is accepted even if it then drives the bucket
// negative.
func (m *Manager) CheckMutations(user, clientID string) (throttle time.Duration, ok bool) {
	s, now := m.sensorFor(kMutation, user, clientID)
	if s == nil {
		return 0, true
	}
	s.mu.Lock()
	s.b.refill(now)
	tokens, rate := s.b.tokens, s.b.rate
	s.mu.Unlock()
	t := throttleFor(-tokens, rate, maxThrottle)
	if t > 0 && m.metrics != nil {
		m.metrics.throttled[kMutation].Inc()
	}
	return t, t == 0
}

// RecordMutations records n partitions created or deleted and returns the
// throttle (permissive mode throttles with it; strict mode reports it).
func (m *Manager) RecordMutations(user, clientID string, n int) time.Duration {
	return m.record(kMutation, user, clientID, float64(max(n, 0)), maxThrottle)
}

// RecordConnection admits a new connection from ip against
// connection_creation_rate (ips/<ip>, else ips/<default>, each ip measured
// on its own). Throttle > 0: the connection is over the rate and was not
// counted; the broker closes it after the throttle (KIP-612). An address
// that does not parse gets the default quota, shared by all such.
func (m *Manager) RecordConnection(ip string) time.Duration {
	c := m.cur.Load()
	if !c.anyIP {
		return 0
	}
	a, valid := parseIP(ip)
	limit, ok := c.ips[a]
	if !valid || !ok {
		limit = c.defIP
	}
	if limit <= 0 {
		return 0
	}
	now := m.nanos()
	s := m.ipSensor(a, limit, c, now)
	m.touch(&s.lastUse, now)
	m.maybeSweep(now)
	s.mu.Lock()
	if c.epoch > s.epoch {
		s.epoch = c.epoch
		if limit != s.b.rate {
			s.b.burstSec, _ = m.shape(kConnection, limit)
			s.b.setRate(limit, min(c.at, now))
			s.b.refill(now)
		}
	}
	s.b.refill(now)
	var t time.Duration
	if s.b.tokens >= 1 {
		s.b.tokens--
	} else {
		t = max(throttleFor(1-s.b.tokens, s.b.rate, maxThrottle), time.Millisecond)
	}
	s.mu.Unlock()
	if t > 0 && m.metrics != nil {
		m.metrics.throttled[kConnection].Inc()
	}
	return t
}

func (m *Manager) ipSensor(a netip.Addr, limit float64, c *generation, now int64) *sensor {
	m.ipMu.Lock()
	s := m.ips[a]
	if s == nil {
		burst, floor := m.shape(kConnection, limit)
		s = &sensor{b: newBucket(limit, burst, floor, now), epoch: c.epoch}
		s.lastUse.Store(now)
		m.ips[a] = s
		m.ipMu.Unlock()
		return s
	}
	m.ipMu.Unlock()
	return s
}
