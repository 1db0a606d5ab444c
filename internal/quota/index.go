package quota

import (
	"hash/maphash"
	"maps"
)

// index is a map split into shards so that a generation derived from the
// previous one copies only the shards a change touches (copy-on-write)
// instead of all 100,000 entries. Lookups pay one extra hash; they happen
// only when a connection (re)binds, never on the steady Record path.
type index[K comparable, V any] struct {
	m     [indexShards]map[K]V
	owned *[indexShards]bool // while deriving: shards already private
}

const indexShards = 256

var indexSeed = maphash.MakeSeed()

func shardOfKey[K comparable](k K) int {
	return int(maphash.Comparable(indexSeed, k) % indexShards)
}

func (x *index[K, V]) get(k K) V { return x.m[shardOfKey(k)][k] } // nil shard: zero V

func (x *index[K, V]) put(k K, v V) {
	i := shardOfKey(k)
	x.writable(i)
	x.m[i][k] = v
}

func (x *index[K, V]) del(k K) {
	i := shardOfKey(k)
	if _, ok := x.m[i][k]; ok {
		x.writable(i)
		delete(x.m[i], k)
	}
}

func (x *index[K, V]) writable(i int) {
	switch {
	case x.m[i] == nil:
		x.m[i] = map[K]V{}
	case x.owned != nil && !x.owned[i]:
		x.m[i] = maps.Clone(x.m[i])
	default:
		return
	}
	if x.owned != nil {
		x.owned[i] = true
	}
}

// presize allocates the shards for about n entries.
func (x *index[K, V]) presize(n int) {
	for i := range x.m {
		x.m[i] = make(map[K]V, n/indexShards+1)
	}
}

// startDerive makes x, a copy of a published index, safe to change.
func (x *index[K, V]) startDerive() { x.owned = new([indexShards]bool) }

func (x *index[K, V]) endDerive() { x.owned = nil }

func (x *index[K, V]) all(yield func(K, V) bool) {
	for _, m := range x.m {
		for k, v := range m {
			if !yield(k, v) {
				return
			}
		}
	}
}
