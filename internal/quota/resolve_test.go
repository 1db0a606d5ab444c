package quota

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

type conn struct{ user, client string }

// expect is one row of a precedence table: the limit a connection gets,
// and which other connections share its measurement (same sensor) or must
// not (own sensor).
type expect struct {
	c        conn
	limit    float64 // 0: unlimited
	sharedBy []conn
	notWith  []conn
}

func checkTable(t *testing.T, m *Manager, key string, rows []expect) {
	t.Helper()
	k, _ := keyByName(key)
	for _, r := range rows {
		limit, levels, ok := m.Resolve(r.c.user, r.c.client, key)
		if r.limit == 0 {
			if ok {
				t.Errorf("%s %v: limit %v (%v), want unlimited", key, r.c, limit, levels)
			}
			continue
		}
		if !ok || limit != r.limit {
			t.Errorf("%s %v: limit %v ok=%v, want %v (levels %v)", key, r.c, limit, ok, r.limit, levels)
			continue
		}
		s, _ := m.sensorFor(k, r.c.user, r.c.client)
		if s == nil || s.b.rate != r.limit {
			t.Errorf("%s %v: sensor %v, want rate %v", key, r.c, s, r.limit)
			continue
		}
		for _, o := range r.sharedBy {
			if so, _ := m.sensorFor(k, o.user, o.client); so != s {
				t.Errorf("%s: %v and %v should share one quota", key, r.c, o)
			}
		}
		for _, o := range r.notWith {
			if so, _ := m.sensorFor(k, o.user, o.client); so == s {
				t.Errorf("%s: %v and %v should not share a quota", key, r.c, o)
			}
		}
	}
}

func quotaKeys() []string {
	return []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}
}

// set gives every user/client key the same value on path.
func setAll(o Overrides, path string, v float64) {
	o[path] = map[string]float64{}
	for _, k := range quotaKeys() {
		o[path][k] = v
	}
}

// TestQuotaConfigPrecedence follows Kafka's ClientQuotaManagerTest
// testQuotaConfigPrecedence (same entities and numbers), for every quota
// type, in independent mode; plus level 4 (users/<default>/clients/C),
// which Kafka's test does not cover.
func TestQuotaConfigPrecedence(t *testing.T) {
	o := Overrides{}
	setAll(o, "users/<default>", 1000)
	setAll(o, "clients/<default>", 2000)
	setAll(o, "users/<default>/clients/<default>", 3000)
	setAll(o, "users/userA", 4000)
	setAll(o, "users/userA/clients/client1", 5000)
	setAll(o, "users/userB", 6000)
	setAll(o, "users/userB/clients/client1", 7000)
	setAll(o, "users/userB/clients/<default>", 8000)
	setAll(o, "users/userC", 10000)
	setAll(o, "clients/client1", 9000)
	setAll(o, "users/<default>/clients/client9", 11000)

	for _, key := range quotaKeys() {
		t.Run(key, func(t *testing.T) {
			m := New(Options{ExpireEvery: -1})
			m.SetOverrides(o)
			checkTable(t, m, key, []expect{
				// <user, client> takes precedence over <user>, and is exclusive.
				{c: conn{"userA", "client1"}, limit: 5000, notWith: []conn{{"userA", "client2"}, {"userB", "client1"}}},
				// <user> beats <client> and the defaults, and is shared by the user's clients.
				{c: conn{"userA", "client2"}, limit: 4000, sharedBy: []conn{{"userA", "client3"}}},
				{c: conn{"userB", "client1"}, limit: 7000},
				// <user, default-client>: each client of userB its own copy.
				{c: conn{"userB", "client2"}, limit: 8000, notWith: []conn{{"userB", "client3"}}},
				{c: conn{"userC", "client1"}, limit: 10000, sharedBy: []conn{{"userC", "client7"}}},
				// <default-user, client> beats <default-user, default-client>.
				{c: conn{"userD", "client9"}, limit: 11000, notWith: []conn{{"userE", "client9"}}},
				// <default-user, default-client>: per (user, client) pair.
				{c: conn{"userD", "client1"}, limit: 3000, notWith: []conn{{"userD", "client2"}, {"userE", "client1"}}},
			})

			delete(o, "users/<default>/clients/<default>")
			m.SetOverrides(o)
			checkTable(t, m, key, []expect{
				// Falls back to the default user, shared by each user's clients.
				{c: conn{"userD", "client1"}, limit: 1000, sharedBy: []conn{{"userD", "client4"}}, notWith: []conn{{"userE", "client1"}}},
				{c: conn{"userB", "client2"}, limit: 8000},
			})

			delete(o, "users/<default>")
			m.SetOverrides(o)
			checkTable(t, m, key, []expect{
				// <client> beats <default-client>; shared across users.
				{c: conn{"userG", "client1"}, limit: 9000, sharedBy: []conn{{"userH", "client1"}}},
				// <default-client>: each client-id shared across users.
				{c: conn{"userG", "client2"}, limit: 2000, sharedBy: []conn{{"userH", "client2"}}, notWith: []conn{{"userG", "client3"}}},
				{c: conn{"userA", "client2"}, limit: 4000},
			})

			delete(o, "clients/<default>")
			delete(o, "clients/client1")
			m.SetOverrides(o)
			checkTable(t, m, key, []expect{{c: conn{"userG", "client1"}, limit: 0}})

			// restore for the next key
			setAll(o, "users/<default>", 1000)
			setAll(o, "clients/<default>", 2000)
			setAll(o, "users/<default>/clients/<default>", 3000)
			setAll(o, "clients/client1", 9000)
		})
	}
}

// TestPrecedenceIsPerKey: a level counts only for the keys it sets.
func TestPrecedenceIsPerKey(t *testing.T) {
	m := New(Options{ExpireEvery: -1})
	m.SetOverrides(Overrides{
		"users/u/clients/c": {ProducerByteRate: 100},
		"users/u":           {ConsumerByteRate: 200, ProducerByteRate: 900},
		"clients/c":         {RequestPercentage: 30},
	})
	for key, want := range map[string]float64{ProducerByteRate: 100, ConsumerByteRate: 200, RequestPercentage: 30, ControllerMutationRate: 0} {
		got, _, ok := m.Resolve("u", "c", key)
		if got != want || ok != (want != 0) {
			t.Errorf("%s = %v (ok %v), want %v", key, got, ok, want)
		}
	}
}

// TestResolveLevels pins the synonym list DescribeConfigs shows: every
// level with a value, most specific first, named by path.
func TestResolveLevels(t *testing.T) {
	m := New(Options{ExpireEvery: -1, UserProducerDefault: 500, ClientProducerDefault: 300})
	m.SetOverrides(Overrides{
		"users/userB/clients/<default>":     {ProducerByteRate: 8000},
		"users/userB":                       {ProducerByteRate: 6000},
		"users/<default>/clients/<default>": {ProducerByteRate: 3000},
		"users/<default>/clients/client2":   {ProducerByteRate: 3500},
		"users/<default>":                   {ProducerByteRate: 1000},
		"clients/<default>":                 {ProducerByteRate: 2000},
		"clients/client2":                   {ProducerByteRate: 2500},
		"users/userB/clients/client2":       {ConsumerByteRate: 1}, // other key: not a level for produce
	})
	limit, levels, ok := m.Resolve("userB", "client2", ProducerByteRate)
	want := []Level{
		{"users/userB/clients/<default>", 8000, false},
		{"users/userB", 6000, false},
		{"users/<default>/clients/client2", 3500, false},
		{"users/<default>/clients/<default>", 3000, false},
		{"users/<default>", 1000, false},
		{"quota.user.producer.default", 500, true},
		{"clients/client2", 2500, false},
		{"clients/<default>", 2000, false},
		{"quota.producer.default", 300, true},
	}
	if !ok || limit != 8000 || !slices.Equal(levels, want) {
		t.Errorf("Resolve = %v %v\n got %v\nwant %v", limit, ok, levels, want)
	}
	// Names are sanitized in level paths.
	_, levels, _ = m.Resolve("a b", "c*", ProducerByteRate)
	if levels[0].Path != "users/<default>/clients/<default>" {
		t.Errorf("levels %v", levels)
	}
	m.SetOverrides(Overrides{"users/a%20b/clients/c%2A": {ProducerByteRate: 7}})
	if limit, levels, _ := m.Resolve("a b", "c*", ProducerByteRate); limit != 7 || levels[0].Path != "users/a%20b/clients/c%2A" {
		t.Errorf("sanitized entity: %v %v", limit, levels)
	}
	if _, _, ok := m.Resolve("u", "c", "no_such_key"); ok {
		t.Error("unknown key resolved")
	}
}

// TestStaticDefaults places the server.properties defaults: the user
// default like users/<default> just below it; the client default like
// clients/<default> just below it, reachable only when no user level
// applies ("only if default user quota is unlimited").
func TestStaticDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                string
		userDef, clientDef  float64
		o                   Overrides
		mode                SubquotaMode
		produce, consume    float64
		sharedWithOtherUser bool // (u1,c) and (u2,c) share
		sharedWithOtherCli  bool // (u1,c) and (u1,d) share
	}{
		{name: "user default per user", userDef: 500, produce: 500, sharedWithOtherCli: true},
		{name: "dynamic default user above static", userDef: 500, o: Overrides{"users/<default>": {ProducerByteRate: 1000}}, produce: 1000, sharedWithOtherCli: true},
		{name: "static user default above client override", userDef: 500, o: Overrides{"clients/c": {ProducerByteRate: 700}}, produce: 500, sharedWithOtherCli: true},
		{name: "explicit user above static", userDef: 500, o: Overrides{"users/u1": {ProducerByteRate: 50}}, produce: 50, sharedWithOtherCli: true},
		{name: "client default when user default unlimited", clientDef: 300, produce: 300, sharedWithOtherUser: true},
		{name: "client default per (user, client) in reserved mode", clientDef: 300, mode: Reserved, produce: 300},
		{name: "dynamic default client above static", clientDef: 300, o: Overrides{"clients/<default>": {ProducerByteRate: 2000}}, produce: 2000, sharedWithOtherUser: true},
		{name: "client override above static client default", clientDef: 300, o: Overrides{"clients/c": {ProducerByteRate: 700}}, produce: 700, sharedWithOtherUser: true},
		{name: "consumer default is separate", userDef: 0, clientDef: 0, consume: 0, produce: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Options{ExpireEvery: -1, Mode: tc.mode, UserProducerDefault: tc.userDef, ClientProducerDefault: tc.clientDef})
			m.SetOverrides(tc.o)
			row := expect{c: conn{"u1", "c"}, limit: tc.produce}
			if tc.produce != 0 {
				if tc.sharedWithOtherUser {
					row.sharedBy = append(row.sharedBy, conn{"u2", "c"})
				} else {
					row.notWith = append(row.notWith, conn{"u2", "c"})
				}
				if tc.sharedWithOtherCli {
					row.sharedBy = append(row.sharedBy, conn{"u1", "d"})
				} else {
					row.notWith = append(row.notWith, conn{"u1", "d"})
				}
			}
			checkTable(t, m, ProducerByteRate, []expect{row})
			checkTable(t, m, ConsumerByteRate, []expect{{c: conn{"u1", "c"}, limit: tc.consume}})
			// Static defaults exist for byte rates only.
			checkTable(t, m, RequestPercentage, []expect{{c: conn{"u1", "c"}}})
		})
	}
}

// user2SubquotaOverrides is a user with a quota and two (user, client-id)
// sub-quotas (user2 = 4096/8192 bytes/s, its clientA = 10/20 and clientB =
// 30/40), beside a plain user and a client-id quota.
func user2SubquotaOverrides() Overrides {
	return Overrides{
		"users/user1":                 {ProducerByteRate: 1024, ConsumerByteRate: 2048},
		"users/user2":                 {ProducerByteRate: 4096, ConsumerByteRate: 8192},
		"users/user2/clients/clientA": {ProducerByteRate: 10, ConsumerByteRate: 20},
		"users/user2/clients/clientB": {ProducerByteRate: 30, ConsumerByteRate: 40},
		"clients/clientA":             {ProducerByteRate: 100, ConsumerByteRate: 200},
	}
}

// TestReservedModeCarvesSubquotasOutOfUserTotal: in reserved mode user2's
// other clients share what clientA and clientB leave of its total.
func TestReservedModeCarvesSubquotasOutOfUserTotal(t *testing.T) {
	m := New(Options{ExpireEvery: -1, Mode: Reserved, ClientProducerDefault: 300, ClientConsumerDefault: 400})
	m.SetOverrides(user2SubquotaOverrides())
	checkTable(t, m, ProducerByteRate, []expect{
		{c: conn{"user1", "x"}, limit: 1024, sharedBy: []conn{{"user1", "y"}, {"user1", "clientA"}}},
		{c: conn{"user2", "clientA"}, limit: 10, notWith: []conn{{"user2", "clientB"}, {"user2", "clientC"}}},
		{c: conn{"user2", "clientB"}, limit: 30},
		{c: conn{"user2", "clientC"}, limit: 4056, sharedBy: []conn{{"user2", "clientD"}}},
		// user3: no user quota, so client-id quotas apply, each for the sole use of (user3, client).
		{c: conn{"user3", "clientA"}, limit: 100, notWith: []conn{{"user4", "clientA"}}},
		{c: conn{"user3", "clientB"}, limit: 300, notWith: []conn{{"user4", "clientB"}, {"user3", "clientC"}}},
	})
	checkTable(t, m, ConsumerByteRate, []expect{
		{c: conn{"user1", "x"}, limit: 2048},
		{c: conn{"user2", "clientA"}, limit: 20},
		{c: conn{"user2", "clientB"}, limit: 40},
		{c: conn{"user2", "clientC"}, limit: 8132, sharedBy: []conn{{"user2", "clientZ"}}},
		{c: conn{"user3", "clientA"}, limit: 200},
		{c: conn{"user3", "clientB"}, limit: 400},
	})
	// The remainder is the effective limit; the configured total is the level.
	if _, levels, _ := m.Resolve("user2", "clientC", ProducerByteRate); levels[0] != (Level{"users/user2", 4096, false}) {
		t.Errorf("levels %v", levels)
	}

	// With a static user default, user3 gets a hard total too.
	m = New(Options{ExpireEvery: -1, Mode: Reserved, UserProducerDefault: 5000})
	o := user2SubquotaOverrides()
	o["users/user3/clients/clientA"] = map[string]float64{ProducerByteRate: 1000}
	m.SetOverrides(o)
	checkTable(t, m, ProducerByteRate, []expect{
		{c: conn{"user3", "clientB"}, limit: 4000, sharedBy: []conn{{"user3", "clientC"}}},
		{c: conn{"user3", "clientA"}, limit: 1000},
		{c: conn{"user5", "clientA"}, limit: 5000, sharedBy: []conn{{"user5", "x"}}}, // clients/clientA is below the user total
	})
}

// TestIndependentModeSubquotasBesideUserTotal: the same configuration in
// Kafka's mode, where a sub-quota takes nothing from the user's total.
func TestIndependentModeSubquotasBesideUserTotal(t *testing.T) {
	m := New(Options{ExpireEvery: -1})
	m.SetOverrides(user2SubquotaOverrides())
	checkTable(t, m, ProducerByteRate, []expect{
		{c: conn{"user2", "clientA"}, limit: 10},
		{c: conn{"user2", "clientC"}, limit: 4096, sharedBy: []conn{{"user2", "clientD"}}}, // not 4056
		{c: conn{"user3", "clientA"}, limit: 100, sharedBy: []conn{{"user4", "clientA"}}},  // clients/C is shared across users
	})
	checkTable(t, m, ConsumerByteRate, []expect{{c: conn{"user2", "clientC"}, limit: 8192}})
}

// TestReservedModeOtherLevels pins the reserved-mode rules for the levels
// user2SubquotaOverrides does not exercise.
func TestReservedModeOtherLevels(t *testing.T) {
	m := New(Options{ExpireEvery: -1, Mode: Reserved})
	m.SetOverrides(Overrides{
		"users/<default>":                   {ProducerByteRate: 1000},
		"users/u9/clients/x":                {ProducerByteRate: 100},
		"users/u9/clients/y":                {ProducerByteRate: 50},
		"users/u7":                          {ProducerByteRate: 600},
		"users/u7/clients/<default>":        {ProducerByteRate: 20}, // shadowed: u7 has a total
		"users/<default>/clients/z":         {ProducerByteRate: 70}, // shadowed for every user: all have a total
		"users/<default>/clients/<default>": {ConsumerByteRate: 5},  // no consumer total anywhere: applies
		"clients/w":                         {ConsumerByteRate: 9},
	})
	checkTable(t, m, ProducerByteRate, []expect{
		// A default-user total is reduced by the user's own reservations.
		{c: conn{"u9", "other"}, limit: 850, sharedBy: []conn{{"u9", "z"}}},
		{c: conn{"u9", "x"}, limit: 100},
		{c: conn{"u8", "other"}, limit: 1000, sharedBy: []conn{{"u8", "z"}}, notWith: []conn{{"u9", "other"}}},
		{c: conn{"u7", "q"}, limit: 600, sharedBy: []conn{{"u7", "r"}}},
	})
	checkTable(t, m, ConsumerByteRate, []expect{
		{c: conn{"u9", "other"}, limit: 5, notWith: []conn{{"u9", "z"}}},
		{c: conn{"u9", "w"}, limit: 5}, // users/<default>/clients/<default> beats clients/w
	})
	_, levels, _ := m.Resolve("u7", "z", ProducerByteRate)
	var paths []string
	for _, l := range levels {
		paths = append(paths, l.Path)
	}
	if got := strings.Join(paths, " "); got != "users/u7 users/<default> users/u7/clients/<default> users/<default>/clients/z" {
		t.Errorf("reserved-mode level order: %s", got)
	}
}

// TestReservedTotalHolds drives greedy producers on all of user2's clients
// in reserved mode: the user's total never exceeds 4096 B/s in steady state,
// and the unreserved clients share the 4056 remainder.
func TestReservedTotalHolds(t *testing.T) {
	clk := &simClock{}
	m := New(Options{Now: clk.now, ExpireEvery: -1, Mode: Reserved})
	m.SetOverrides(user2SubquotaOverrides())
	clients := []string{"clientA", "clientB", "clientC", "clientD", "clientE"}
	next := make([]int64, len(clients))
	sent := make([]int, len(clients))
	const size = 64
	const dur = int64(120e9)
	for {
		i := 0
		for j := range next {
			if next[j] < next[i] {
				i = j
			}
		}
		if next[i] >= dur {
			break
		}
		clk.ns = next[i]
		th := m.RecordProduce("user2", clients[i], size)
		if clk.ns >= 20e9 {
			sent[i] += size
		}
		next[i] += int64(th) + 100e3
	}
	secs := float64(dur-20e9) / 1e9
	rate := func(i int) float64 { return float64(sent[i]) / secs }
	total := 0.0
	for i := range clients {
		total += rate(i)
	}
	t.Logf("reserved: A %.1f B %.1f C+D+E %.1f total %.1f B/s", rate(0), rate(1), rate(2)+rate(3)+rate(4), total)
	if total > 4096*1.02 {
		t.Errorf("user2 total %.1f B/s above 4096", total)
	}
	for i, want := range []float64{10, 30} {
		if r := rate(i); r > want*1.05 || r < want*0.9 {
			t.Errorf("%s at %.1f B/s, want ≈%v", clients[i], r, want)
		}
	}
	if shared := rate(2) + rate(3) + rate(4); shared > 4056*1.02 || shared < 4056*0.95 {
		t.Errorf("unreserved clients at %.1f B/s, want ≈4056", shared)
	}
}

func TestSharedQuotaIsShared(t *testing.T) {
	// Kafka's "<user> quota is shared across clients of user": a burst from
	// one client throttles the next client of the same user.
	clk := &simClock{}
	m := New(Options{Now: clk.now, ExpireEvery: -1})
	m.SetOverrides(Overrides{"users/userA": {ProducerByteRate: 4000}, "users/userA/clients/client1": {ProducerByteRate: 5000}})
	if th := m.RecordProduce("userA", "client2", 4500); th == 0 {
		t.Fatal("over the user quota but not throttled")
	}
	if th := m.RecordProduce("userA", "client3", 1); th == 0 {
		t.Error("client3 not throttled although client2 used the shared quota")
	}
	if th := m.RecordProduce("userA", "client1", 4500); th != 0 {
		t.Errorf("client1's own quota affected by other clients: %v", th)
	}
}

// TestDerivedConfigMatchesCompiled: SetOverrides reuses the previous
// compile when few entities changed; every answer must equal a full
// compile's, in both modes, over a random walk of changes that share
// unchanged inner maps the way the metadata store's snapshots do.
func TestDerivedConfigMatchesCompiled(t *testing.T) {
	for _, mode := range []SubquotaMode{Independent, Reserved} {
		r := rand.New(rand.NewPCG(uint64(mode), 7))
		m := New(Options{Mode: mode, ExpireEvery: -1, UserProducerDefault: 5000})
		name := func(prefix string, n int) string {
			if r.IntN(8) == 0 {
				return DefaultName
			}
			return fmt.Sprint(prefix, r.IntN(n))
		}
		randomPath := func() string {
			switch r.IntN(5) {
			case 0:
				return "users/" + name("u", 40)
			case 1, 2:
				return "users/" + name("u", 40) + "/clients/" + name("c", 10)
			case 3:
				return "clients/" + name("c", 10)
			}
			return fmt.Sprintf("ips/10.0.0.%d", r.IntN(5))
		}
		randomValues := func(path string) map[string]float64 {
			if strings.HasPrefix(path, "ips/") {
				return map[string]float64{ConnectionCreationRate: float64(1 + r.IntN(50))}
			}
			kv := map[string]float64{}
			for _, k := range quotaKeys() {
				if r.IntN(2) == 0 {
					kv[k] = float64(1 + r.IntN(1000))
				}
			}
			return kv
		}
		o := Overrides{}
		for i := range 1100 { // past derive's minimum size
			o[fmt.Sprintf("users/filler%d", i)] = map[string]float64{ProducerByteRate: 1}
		}
		m.SetOverrides(o)
		for step := range 200 {
			next := maps.Clone(o) // shares every inner map
			for range 1 + r.IntN(4) {
				p := randomPath()
				if _, ok := next[p]; ok && r.IntN(3) == 0 {
					delete(next, p)
				} else {
					next[p] = randomValues(p)
				}
			}
			before := m.derived
			m.SetOverrides(next)
			o = next
			want := compile(o, &m.opts, 0)
			got := m.cur.Load()
			if m.derived != before+1 {
				t.Fatalf("step %d: compiled in full, not derived", step)
			}
			for _, u := range []string{"u0", "u1", "u7", "u39", "filler3", "nobody"} {
				for _, c := range []string{"c0", "c3", "c9", "x"} {
					for k := range numKeys {
						if a, b := got.resolve(u, c, k), want.resolve(u, c, k); a != b {
							t.Fatalf("mode %d step %d: %s/%s %s: derived %+v, compiled %+v", mode, step, u, c, keyNames[k], a, b)
						}
					}
				}
			}
			for i := range 5 {
				ip := fmt.Sprintf("10.0.0.%d", i)
				a, _ := parseIP(ip)
				if got.ips[a] != want.ips[a] || got.defIP != want.defIP {
					t.Fatalf("step %d: ip %s differs", step, ip)
				}
			}
			if mode == Reserved {
				for u, n := range want.users.all {
					if got.users.get(u).reserved != n.reserved {
						t.Fatalf("step %d: reservations of %s: %v vs %v", step, u, got.users.get(u).reserved, n.reserved)
					}
				}
			}
		}
	}
}
