package celpolicy

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// varSet is a set of the rule variables, one bit each.
type varSet uint16

const (
	varOperation varSet = 1 << iota
	varPrincipal
	varClient
	varResource
	varChanges
	varConfigs
	varTopic
	varEntity
	varQuotas
)

var varBits = map[string]varSet{"operation": varOperation, "principal": varPrincipal, "client": varClient,
	"resource": varResource, "changes": varChanges, "configs": varConfigs, "topic": varTopic,
	"entity": varEntity, "quotas": varQuotas}

// referenced is the variables a checked expression reads. A comprehension
// variable with a variable's name counts as that variable: too many
// dependencies only cost a remembered answer, never a wrong one.
func referenced(ast *cel.Ast) varSet {
	var s varSet
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if len(ref.OverloadIDs) == 0 {
			s |= varBits[ref.Name]
		}
	}
	return s
}

// group is rules of one operation that read the same variables, in one
// program. A memo group (one that reads nothing of the resource itself)
// remembers its answer by the value of the variables it reads: CEL has no
// side effects, so equal inputs give equal answers.
type group struct {
	rules []*Rule
	at    []int // each rule's position among the operation's rules
	deps  varSet
	prgs  []*program // one per chunk of rules
	memo  bool
	// configKeys are the configs the group's rules read, when they read
	// only constant keys (configsWhole false): a resource's fingerprint
	// then hashes those, not its every config.
	configKeys   []string
	configsWhole bool

	mu    sync.Mutex
	cache map[[2]uint64]int // inputs → first rejecting rule (index in rules), -1: none
}

// maxMemo bounds a group's remembered answers; the memory is dropped whole
// when full.
const maxMemo = 4096

func (g *group) remembered(key [2]uint64) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, ok := g.cache[key]
	return i, ok
}

func (g *group) remember(key [2]uint64, i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cache == nil || len(g.cache) >= maxMemo {
		g.cache = map[[2]uint64]int{}
	}
	g.cache[key] = i
}

// firstRejecting runs the group on vars: the index (in the group) of the
// first rule that rejects, -1 when none does, ok false when the program
// could not be evaluated (the caller then runs the rules one by one).
func (g *group) firstRejecting(vars *Vars) (int, bool) {
	var key [2]uint64
	if g.memo {
		key = vars.fingerprint(g.deps, g)
		if i, ok := g.remembered(key); ok {
			return i, true
		}
	}
	first := -1
	for c, prg := range g.prgs {
		out, err := prg.eval(vars.activation())
		if err != nil {
			return 0, false
		}
		i, ok := out.(types.Int)
		if !ok {
			return 0, false
		}
		if i >= 0 {
			first = c*chunk + int(i)
			break
		}
	}
	if g.memo {
		g.remember(key, first)
	}
	return first, true
}

// seed keys the fingerprints: chosen at random per process, so that no
// one can craft two inputs that collide.
var seed = maphash.MakeSeed()

// fingerprint identifies the values of the variables in deps: a 64-bit
// keyed hash, with the number and total length of the strings hashed as a
// second word (a collision needs both to match).
func (v *Vars) fingerprint(deps varSet, g *group) [2]uint64 {
	var out [2]uint64
	for bit := varOperation; bit <= varQuotas; bit <<= 1 {
		if deps&bit == 0 {
			continue
		}
		var h [2]uint64
		switch bit {
		case varOperation:
			h = strHash(v.Operation)
		case varPrincipal:
			h = strHash(v.Principal)
		case varClient:
			h = add(strHash(v.ClientAddress), mix(strHash(v.Listener)))
		case varChanges:
			if v.changesSum == ([2]uint64{}) {
				v.changesSum = mapHash(v.Changes, changeString)
			}
			h = v.changesSum
		case varConfigs:
			if !g.configsWhole {
				h = keysHash(v.Configs, g.configKeys)
				break
			}
			if v.configsSum == ([2]uint64{}) {
				v.configsSum = mapHash(v.Configs, func(s string) string { return s })
			}
			h = v.configsSum
		case varEntity:
			h = mapHash(v.Entity, func(s string) string { return s })
		case varQuotas:
			h = mapHash(v.Quotas, func(f float64) string { return strconv.FormatUint(math.Float64bits(f), 16) })
		}
		out = add(mix(out), add(h, [2]uint64{uint64(bit), 0}))
	}
	return out
}

func changeString(x any) string {
	switch x := x.(type) {
	case string:
		return "s" + x
	case float64:
		return "f" + strconv.FormatUint(math.Float64bits(x), 16)
	case types.Null:
		return "n"
	default:
		return fmt.Sprintf("%T:%v", x, x)
	}
}

func strHash(s string) [2]uint64 { return [2]uint64{maphash.String(seed, s), uint64(len(s)) + 1} }

func add(a, b [2]uint64) [2]uint64 { return [2]uint64{a[0] + b[0], a[1] + b[1]} }

// mix makes a sum's terms unequal by position (a ≠ a swapped with b).
func mix(a [2]uint64) [2]uint64 {
	return [2]uint64{bits.RotateLeft64(a[0], 17) * 0x9E3779B97F4A7C15, a[1] * 31}
}

// mapHash is an order-independent fingerprint of m: the sum of its
// entries', each key's hash mixed apart from its value's.
func mapHash[V any](m map[string]V, str func(V) string) [2]uint64 {
	sum := [2]uint64{uint64(len(m)) + 1, uint64(len(m))}
	for k, val := range m {
		sum = add(sum, add(mix(strHash(k)), strHash(str(val))))
	}
	return sum
}

// keysRead finds which keys of the map variable name an expression reads:
// every use must be name["key"], name.key (has() included) or "key" in
// name with a constant key; any other use (a comprehension over it, a key
// computed at run time) reads it whole.
func keysRead(ast *cel.Ast, name string) (keys []string, whole bool) {
	refs := ast.NativeRep().ReferenceMap()
	uses := celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), func(e celast.NavigableExpr) bool {
		if e.Kind() != celast.IdentKind || e.AsIdent() != name {
			return false
		}
		ref, ok := refs[e.ID()]
		return ok && ref.Name == name
	})
	for _, use := range uses {
		key, ok := constantKey(use)
		if !ok {
			return nil, true
		}
		keys = append(keys, key)
	}
	return keys, false
}

// constantKey is the key a use of a map variable reads, if constant.
func constantKey(use celast.NavigableExpr) (string, bool) {
	parent, ok := use.Parent()
	if !ok {
		return "", false
	}
	literal := func(e celast.Expr) (string, bool) {
		if e.Kind() != celast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().(types.String)
		return string(s), ok
	}
	switch parent.Kind() {
	case celast.SelectKind:
		return parent.AsSelect().FieldName(), true
	case celast.CallKind:
		call := parent.AsCall()
		args := call.Args()
		switch {
		case call.FunctionName() == operators.Index && len(args) == 2 && args[0].ID() == use.ID():
			return literal(args[1])
		case call.FunctionName() == operators.In && len(args) == 2 && args[1].ID() == use.ID():
			return literal(args[0])
		}
	}
	return "", false
}

// keysHash fingerprints the values (or absence) of keys in m.
func keysHash(m map[string]string, keys []string) [2]uint64 {
	sum := [2]uint64{uint64(len(keys)) + 1, 0}
	for _, k := range keys {
		v, ok := m[k]
		h := mix(strHash(k))
		if ok {
			h = add(h, strHash(v))
		}
		sum = add(mix(sum), h)
	}
	return sum
}
