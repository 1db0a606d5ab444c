package quota

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Overrides are all dynamic quota overrides: entity path -> key -> value.
// A Manager never modifies one it is handed.
type Overrides map[string]map[string]float64

// values are one entity's settings for the user/client keys, stored by
// value in the index maps (no allocation per entity).
type values struct {
	v   [numKeys]float64
	set [numKeys]bool
}

func (x values) get(k keyID) (float64, bool) { return x.v[k], x.set[k] }

func (x values) empty() bool { return x.set == [numKeys]bool{} }

// userNode holds what is keyed by the user alone.
type userNode struct {
	own       values // users/<u>
	defClient values // users/<u>/clients/<default>
	// reserved is, per key, the sum of the explicit (user, client-id)
	// sub-quotas: what reserved mode carves out of the user's total.
	reserved [numKeys]float64
}

// generation is one immutable generation of the quota settings, compiled from
// Overrides plus the static defaults for O(1) lookups by raw (desanitized)
// names. A new one replaces the old on every SetOverrides; connections
// notice by pointer comparison and re-resolve.
type generation struct {
	epoch uint64
	at    int64 // Manager clock when installed
	mode  SubquotaMode

	users          index[string, userNode] // users/U, users/U/clients/<default>
	pairs          index[bindKey, values]  // users/U/clients/C
	defUser        userNode                // users/<default>, users/<default>/clients/<default>
	defUserClients index[string, values]   // users/<default>/clients/C
	clients        index[string, values]   // clients/C
	defClient      values                  // clients/<default>
	ips            map[netip.Addr]float64
	defIP          float64 // 0: none

	staticUser, staticClient [numKeys]float64 // server.properties; 0: unlimited
	// enabled: some level sets the key; anyIP: some ip entity exists. Both
	// only gate fast paths, so derive may leave them set after a removal.
	enabled [numKeys]bool
	anyIP   bool
}

func compile(o Overrides, opts *Options, epoch uint64) *generation {
	c := &generation{
		epoch: epoch, mode: opts.Mode,
		ips: map[netip.Addr]float64{},
	}
	setStatic := func(dst *[numKeys]float64, k keyID, v float64) {
		if validValue(v) {
			dst[k] = v
			c.enabled[k] = true
		}
	}
	setStatic(&c.staticUser, kProduce, opts.UserProducerDefault)
	setStatic(&c.staticUser, kFetch, opts.UserConsumerDefault)
	setStatic(&c.staticClient, kProduce, opts.ClientProducerDefault)
	setStatic(&c.staticClient, kFetch, opts.ClientConsumerDefault)
	if len(o) > 4*indexShards { // most entities are pairs and users
		c.pairs.presize(len(o) / 2)
		c.users.presize(len(o) / 2)
	}
	for path, kv := range o {
		c.set(path, kv)
	}
	return c
}

// maxDerived is how many changed entities derive applies one by one before
// a full compile is cheaper.
const maxDerived = 256

// derive builds the config for o from p, the config compiled from prev,
// when o differs from prev in a few entities: an entity whose inner map is
// the very map it was in prev (Overrides are immutable, and the metadata
// store shares unchanged maps between snapshots) is not looked at again.
// nil: compile instead.
func (p *generation) derive(o, prev Overrides, epoch uint64) *generation {
	if prev == nil || len(o) < 1024 {
		return nil
	}
	var changed []string
	kept := 0
	for path, kv := range o {
		if old, ok := prev[path]; ok {
			kept++
			if sameMap(old, kv) {
				continue
			}
		}
		if changed = append(changed, path); len(changed) > maxDerived {
			return nil
		}
	}
	if kept < len(prev) {
		for path := range prev {
			if _, ok := o[path]; !ok {
				if changed = append(changed, path); len(changed) > maxDerived {
					return nil
				}
			}
		}
	}
	changes := make(map[string]map[string]float64, len(changed))
	for _, path := range changed {
		changes[path] = o[path] // nil: removed
	}
	return p.with(changes, epoch)
}

// with is p with changes applied (path -> the entity's new values; nil or
// empty: removed), sharing every index shard the changes do not touch.
func (p *generation) with(changes map[string]map[string]float64, epoch uint64) *generation {
	c := new(generation)
	*c = *p // the indexes' shard arrays are copied; their maps are shared until written
	c.epoch = epoch
	c.ips = maps.Clone(p.ips)
	c.users.startDerive()
	c.pairs.startDerive()
	c.defUserClients.startDerive()
	c.clients.startDerive()
	for path, kv := range changes {
		c.set(path, kv)
	}
	c.users.endDerive()
	c.pairs.endDerive()
	c.defUserClients.endDerive()
	c.clients.endDerive()
	return c
}

func sameMap(a, b map[string]float64) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// set installs one entity's values (nil or no valid values: removes it).
// Paths that do not parse are ignored: ValidateOverrides rejects them and
// enforcement must not trip over them.
func (c *generation) set(path string, kv map[string]float64) {
	e, err := parseEntity(path)
	if err != nil {
		return
	}
	if e.hasIP {
		c.setIP(e, kv)
		return
	}
	vals := c.values(kv)
	switch {
	case e.hasUser && e.hasClient:
		switch {
		case e.defUser && e.defClient:
			c.defUser.defClient = vals
		case e.defUser:
			setOrDelete(&c.defUserClients, e.client, vals)
		case e.defClient:
			n := c.users.get(e.user)
			n.defClient = vals
			c.putUser(e.user, n)
		default:
			key := bindKey{e.user, e.client}
			n := c.users.get(e.user)
			n.reserve(c.pairs.get(key), -1)
			n.reserve(vals, +1)
			c.putUser(e.user, n)
			setOrDelete(&c.pairs, key, vals)
		}
	case e.hasUser && e.defUser:
		c.defUser.own = vals
	case e.hasUser:
		n := c.users.get(e.user)
		n.own = vals
		c.putUser(e.user, n)
	case e.defClient:
		c.defClient = vals
	default:
		setOrDelete(&c.clients, e.client, vals)
	}
}

func (c *generation) putUser(user string, n userNode) {
	if n == (userNode{}) {
		c.users.del(user)
		return
	}
	c.users.put(user, n)
}

func setOrDelete[K comparable](m *index[K, values], k K, v values) {
	if v.empty() {
		m.del(k)
		return
	}
	m.put(k, v)
}

func (n *userNode) reserve(x values, sign float64) {
	for k := range numKeys {
		if x.set[k] {
			n.reserved[k] += sign * x.v[k]
		}
	}
}

func (c *generation) setIP(e entity, kv map[string]float64) {
	v, ok := kv[ConnectionCreationRate]
	valid := ok && validValue(v)
	c.anyIP = c.anyIP || valid
	switch {
	case e.defIP && valid:
		c.defIP = v
	case e.defIP:
		c.defIP = 0
	default:
		if a, ok := parseIP(e.ip); ok && valid {
			c.ips[a] = v
		} else if ok {
			delete(c.ips, a)
		}
	}
}

// values reads the user/client keys of one entity. Unknown keys and bad
// values are skipped.
func (c *generation) values(kv map[string]float64) values {
	var x values
	if len(kv) == 0 {
		return x
	}
	for k, name := range keyNames {
		if v, ok := kv[name]; ok && validValue(v) {
			x.v[k], x.set[k] = v, true
			c.enabled[k] = true
		}
	}
	return x
}

// levelID names one precedence level. The numbering is Kafka's order
// (most specific entity first, user levels before client-id levels) with
// the server.properties static defaults slotted in below the <default>
// entity each stands for.
type levelID int

const (
	lvUserClient       levelID = iota // users/U/clients/C
	lvUserDefClient                   // users/U/clients/<default>
	lvUser                            // users/U
	lvDefUserClient                   // users/<default>/clients/C
	lvDefUserDefClient                // users/<default>/clients/<default>
	lvDefUser                         // users/<default>
	lvStaticUser                      // quota.user.{producer,consumer}.default
	lvClient                          // clients/C
	lvDefClient                       // clients/<default>
	lvStaticClient                    // quota.{producer,consumer}.default
)

var (
	independentOrder = []levelID{lvUserClient, lvUserDefClient, lvUser, lvDefUserClient,
		lvDefUserDefClient, lvDefUser, lvStaticUser, lvClient, lvDefClient, lvStaticClient}
	// Reserved mode: any user-level total (explicit, dynamic default, static
	// default) is hard, so it is consulted before every level that would give
	// a client of that user a quota of its own; only explicit (user,
	// client-id) sub-quotas, reserved out of the total, come first.
	reservedOrder = []levelID{lvUserClient, lvUser, lvDefUser, lvStaticUser, lvUserDefClient,
		lvDefUserClient, lvDefUserDefClient, lvClient, lvDefClient, lvStaticClient}
)

func (c *generation) order() []levelID {
	if c.mode == Reserved {
		return reservedOrder
	}
	return independentOrder
}

func (c *generation) lookup(l levelID, user, client string, k keyID) (float64, bool) {
	switch l {
	case lvUserClient:
		return c.pairs.get(bindKey{user, client}).get(k)
	case lvUserDefClient:
		return c.users.get(user).defClient.get(k)
	case lvUser:
		return c.users.get(user).own.get(k)
	case lvDefUserClient:
		return c.defUserClients.get(client).get(k)
	case lvDefUserDefClient:
		return c.defUser.defClient.get(k)
	case lvDefUser:
		return c.defUser.own.get(k)
	case lvStaticUser:
		return c.staticUser[k], c.staticUser[k] > 0
	case lvClient:
		return c.clients.get(client).get(k)
	case lvDefClient:
		return c.defClient.get(k)
	case lvStaticClient:
		return c.staticClient[k], c.staticClient[k] > 0
	}
	return 0, false
}

// sensorKind says who shares the usage measured at a level; it is also what
// the metric labels carry (Kafka's user / client-id tags).
type sensorKind uint8

const (
	kindPair   sensorKind = iota // one (user, client-id): labels (U, C)
	kindUser                     // all clients of one user: labels (U, "")
	kindClient                   // one client-id across users: labels ("", C)
)

func (c *generation) kindOf(l levelID) sensorKind {
	switch l {
	case lvUser, lvDefUser, lvStaticUser:
		return kindUser
	case lvClient, lvDefClient, lvStaticClient:
		if c.mode == Reserved {
			return kindPair // a client-id quota is for the sole use of each (user, client-id)
		}
		return kindClient
	}
	return kindPair
}

func isUserTotal(l levelID) bool { return l == lvUser || l == lvDefUser || l == lvStaticUser }

// resolution is the outcome of the precedence walk for one key.
type resolution struct {
	level levelID
	limit float64
	kind  sensorKind
	ok    bool
}

func (c *generation) resolve(user, client string, k keyID) resolution {
	for _, l := range c.order() {
		v, ok := c.lookup(l, user, client, k)
		if !ok {
			continue
		}
		r := resolution{level: l, limit: v, kind: c.kindOf(l), ok: true}
		if c.mode == Reserved && isUserTotal(l) {
			r.limit = c.remainder(user, k, v)
		}
		return r
	}
	return resolution{}
}

// remainder is what reserved mode leaves of total for the clients of user
// without a sub-quota. It never reaches zero (ValidateOverrides rejects
// reservations above the total; an equal sum leaves the others 0.1 % of it)
// so throttle arithmetic stays finite.
func (c *generation) remainder(user string, k keyID, total float64) float64 {
	return max(total-c.users.get(user).reserved[k], total/1000)
}

// Level is one precedence level that has a value for a key.
type Level struct {
	Path   string  // entity path, or the server.properties key when Static
	Value  float64 // the configured value
	Static bool    // from server.properties
}

func (c *generation) levels(user, client string, k keyID) []Level {
	var out []Level
	for _, l := range c.order() {
		v, ok := c.lookup(l, user, client, k)
		if !ok {
			continue
		}
		path, static := levelPath(l, user, client, k)
		out = append(out, Level{Path: path, Value: v, Static: static})
	}
	return out
}

func levelPath(l levelID, user, client string, k keyID) (string, bool) {
	u, cl := &user, &client
	switch l {
	case lvUserClient:
		return UserClientPath(u, cl), false
	case lvUserDefClient:
		return UserClientPath(u, nil), false
	case lvUser:
		return UserPath(u), false
	case lvDefUserClient:
		return UserClientPath(nil, cl), false
	case lvDefUserDefClient:
		return UserClientPath(nil, nil), false
	case lvDefUser:
		return UserPath(nil), false
	case lvClient:
		return ClientPath(cl), false
	case lvDefClient:
		return ClientPath(nil), false
	}
	dir := "producer"
	if k == kFetch {
		dir = "consumer"
	}
	if l == lvStaticUser {
		return "quota.user." + dir + ".default", true
	}
	return "quota." + dir + ".default", true
}

// ValidateOverrides checks a proposed full set of overrides: every path and
// key (ValidateKey) and, in reserved mode, that the sub-quotas of each user
// fit in the user's total. The error joins one *ValidationError per fault.
func (m *Manager) ValidateOverrides(o Overrides) error {
	var errs []error
	for path, kv := range o {
		for key, v := range kv {
			if err := ValidateKey(path, key, v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if m.opts.Mode == Reserved {
		errs = append(errs, compile(o, &m.opts, 0).checkReservations(nil)...)
	}
	return joinSorted(errs)
}

// ValidateChanges is ValidateOverrides for an alteration: changes maps
// each altered entity path to its complete new values (nil or empty:
// removed), applied on top of the overrides last passed to SetOverrides.
// It checks the changed keys and, in reserved mode, the reservations of
// the users the change affects (every user when users/<default> changes),
// at a cost independent of the number of unchanged entities (but for a
// users/<default> change, which looks at every user).
func (m *Manager) ValidateChanges(changes Overrides) error {
	var errs []error
	var affected map[string]bool // nil: every user
	all := false
	for path, kv := range changes {
		for key, v := range kv {
			if err := ValidateKey(path, key, v); err != nil {
				errs = append(errs, err)
			}
		}
		e, err := parseEntity(path)
		switch {
		case err != nil && len(kv) == 0:
			errs = append(errs, &ValidationError{Path: path, Msg: err.Error()})
		case err != nil || !e.hasUser:
		case e.defUser && !e.hasClient:
			all = true
		case !e.defUser:
			if affected == nil {
				affected = map[string]bool{}
			}
			affected[e.user] = true
		}
	}
	if m.opts.Mode == Reserved && (all || affected != nil) {
		if all {
			affected = nil
		}
		errs = append(errs, m.cur.Load().with(changes, 0).checkReservations(affected)...)
	}
	return joinSorted(errs)
}

// checkReservations finds the users (among only, nil: all) whose explicit
// sub-quotas sum above the total that applies to them (users/U,
// users/<default>, or the static user default).
func (c *generation) checkReservations(only map[string]bool) []error {
	type fault struct {
		user         string
		k            keyID
		total        float64
		from         string
		contributors []string
	}
	var faults []*fault
	byUser := map[string][]*fault{}
	for user, n := range c.users.all {
		if only != nil && !only[user] {
			continue
		}
		for k := range numKeys {
			if n.reserved[k] == 0 {
				continue
			}
			for _, l := range []levelID{lvUser, lvDefUser, lvStaticUser} {
				if total, ok := c.lookup(l, user, "", k); ok {
					if n.reserved[k] > total*(1+1e-12) {
						from, _ := levelPath(l, user, "", k)
						f := &fault{user: user, k: k, total: total, from: from}
						faults = append(faults, f)
						byUser[user] = append(byUser[user], f)
					}
					break // no total: sub-quotas are plain per-pair quotas
				}
			}
		}
	}
	if len(faults) == 0 {
		return nil
	}
	for key, x := range c.pairs.all {
		for _, f := range byUser[key.user] {
			if v, ok := x.get(f.k); ok {
				f.contributors = append(f.contributors, key.client+"="+fmtNum(v))
			}
		}
	}
	var errs []error
	for _, f := range faults {
		parts := slices.Sorted(slices.Values(f.contributors))
		if len(parts) > 8 {
			parts = append(parts[:8], fmt.Sprintf("and %d more", len(parts)-8))
		}
		errs = append(errs, &ValidationError{Path: UserPath(&f.user), Key: keyNames[f.k], Msg: fmt.Sprintf(
			"reserved sub-quotas of user %q sum to %s (%s), above the user's quota %s (%s)",
			f.user, fmtNum(c.users.get(f.user).reserved[f.k]), strings.Join(parts, ", "), fmtNum(f.total), f.from)})
	}
	return errs
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func joinSorted(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
