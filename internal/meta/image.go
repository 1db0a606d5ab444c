package meta

import (
	"hash/maphash"
	"iter"
	"maps"

	"github.com/benbjohnson/immutable"
)

// The metadata image. A Snapshot is made of sub-images, one per kind of
// record (topics and their partitions, configs, quotas, ACLs, SCRAM
// credentials, live brokers). A committed batch is decoded once into a
// Delta, one typed part per kind, and each kind's applier turns the old
// sub-image and its part into the new one; a kind the batch did not touch
// is shared with the previous snapshot as it is. The large sub-images
// (topics, topic configs) are persistent maps, so changing one topic in an
// image of 100,000 partitions copies a few trie nodes, not the image.
// Adding a kind of record adds an entry to recordKinds and a sub-image, not
// a case to a switch.

// recordKind is one kind of metadata record.
type recordKind struct {
	// decode adds c to d and reports true if c's key is of this kind.
	decode func(d *Delta, c Change) (bool, error)
	// apply installs this kind's part of d into next, a copy of the
	// previous snapshot, if d has one.
	apply func(next *Snapshot, d *Delta)
	// merge adds this kind's part of later to d (later wins per key), for
	// a reconciler that is handed several batches at once.
	merge func(d, later *Delta)
}

var recordKinds = []recordKind{
	clusterIDKind,
	topicsKind,
	partitionsKind,
	configsKind, // before quotas: both live under config/
	quotasKind,
	aclsKind,
	scramKind,
	brokersKind,
}

// Delta is what one or more committed batches changed, decoded once, one
// typed part per sub-image. In each part a key maps to its new value, or
// to nil when it was deleted. Listeners must not modify it.
type Delta struct {
	ClusterID  *string
	Topics     TopicsDelta
	Partitions PartitionsDelta
	Configs    ConfigsDelta
	Quotas     QuotasDelta
	ACLs       ACLsDelta
	Scram      ScramDelta
	Brokers    BrokersDelta
}

// decodeBatch decodes every change of b that belongs to a kind of record;
// keys of no kind are ignored.
func decodeBatch(b Batch) (*Delta, error) {
	d := new(Delta)
	for _, c := range b.Changes {
		for _, k := range recordKinds {
			if ok, err := k.decode(d, c); err != nil {
				return nil, err
			} else if ok {
				break
			}
		}
	}
	return d, nil
}

// applyDelta returns a copy of s at rev with d applied.
func (s *Snapshot) applyDelta(rev int64, d *Delta) *Snapshot {
	n := *s
	n.Rev = rev
	for _, k := range recordKinds {
		k.apply(&n, d)
	}
	return &n
}

// merged returns a new Delta with later's changes over d's; neither is
// modified.
func (d *Delta) merged(later *Delta) *Delta {
	out := new(Delta)
	out.mergeFrom(d)
	out.mergeFrom(later)
	return out
}

// mergeFrom adds later's changes to d, over d's own. d's maps must be its
// own (from merged), not a batch's shared with listeners.
func (d *Delta) mergeFrom(later *Delta) {
	for _, k := range recordKinds {
		k.merge(d, later)
	}
}

var clusterIDKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		if c.Key != keyClusterID {
			return false, nil
		}
		id := string(c.Value)
		d.ClusterID = &id
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		if d.ClusterID != nil {
			next.ClusterID = *d.ClusterID
		}
	},
	merge: func(d, later *Delta) {
		if later.ClusterID != nil {
			d.ClusterID = later.ClusterID
		}
	},
}

// mergeInto copies later's entries into *dst, allocating it on first use,
// so that neither delta's map is modified.
func mergeInto[M ~map[K]V, K comparable, V any](dst *M, later M) {
	if len(later) == 0 {
		return
	}
	if *dst == nil {
		*dst = make(M, len(later))
	}
	maps.Copy(*dst, later)
}

// setDelta records key's new value (or its deletion, as the zero value) in
// *m, allocating the map on first use.
func setDelta[M ~map[K]V, K comparable, V any](m *M, key K, v V) {
	if *m == nil {
		*m = M{}
	}
	(*m)[key] = v
}

// cloneWith returns a copy of m with changes applied: a key whose value is
// deleted(v) is removed. For the small sub-images (quotas, ACLs, SCRAM,
// brokers, broker configs), whose consumers take a whole Go map.
func cloneWith[M ~map[K]V, K comparable, V any](m M, changes M, deleted func(V) bool) M {
	n := maps.Clone(m)
	if n == nil {
		n = M{}
	}
	for k, v := range changes {
		if deleted(v) {
			delete(n, k)
		} else {
			n[k] = v
		}
	}
	return n
}

// Persistent maps (github.com/benbjohnson/immutable's HAMT). Its built-in
// string hasher is a fixed polynomial, so names chosen to collide would
// degrade a lookup to a scan; these hash with a per-process random seed.
var hashSeed = maphash.MakeSeed()

type stringHasher struct{}

func (stringHasher) Hash(s string) uint32   { return uint32(maphash.String(hashSeed, s)) }
func (stringHasher) Equal(a, b string) bool { return a == b }

type topicIDHasher struct{}

func (topicIDHasher) Hash(id TopicID) uint32  { return uint32(maphash.Comparable(hashSeed, id)) }
func (topicIDHasher) Equal(a, b TopicID) bool { return a == b }

// persistentWith returns m with changes applied (a key whose value is
// deleted(v) is removed). Building from nothing (a full load) goes through
// a builder, which mutates in place instead of copying a path per key.
func persistentWith[K comparable, V any](m *immutable.Map[K, V], h immutable.Hasher[K], changes map[K]V, deleted func(V) bool) *immutable.Map[K, V] {
	if m == nil || m.Len() == 0 {
		b := immutable.NewMapBuilder[K, V](h)
		for k, v := range changes {
			if !deleted(v) {
				b.Set(k, v)
			}
		}
		return b.Map()
	}
	for k, v := range changes {
		if deleted(v) {
			m = m.Delete(k)
		} else {
			m = m.Set(k, v)
		}
	}
	return m
}

// getFrom is m's value for key; the zero value if m is nil or lacks it.
func getFrom[K, V any](m *immutable.Map[K, V], key K) V {
	var v V
	if m != nil {
		v, _ = m.Get(key)
	}
	return v
}

// all iterates over m (in no particular order).
func all[K, V any](m *immutable.Map[K, V]) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m == nil {
			return
		}
		for it := m.Iterator(); !it.Done(); {
			k, v, _ := it.Next()
			if !yield(k, v) {
				return
			}
		}
	}
}
