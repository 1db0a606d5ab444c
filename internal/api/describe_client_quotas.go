package api

// DescribeClientQuotas (key 48), v0–v1 (KIP-546).
//
// Lists the quota entities that match a filter, with their overrides. Each
// filter component names an entity type (user, client-id, ip) and matches
// EXACT (that name), DEFAULT (the default entity) or ANY (any name, the
// default included, as in Kafka). Without strict, matching entities may
// have further types; with strict, exactly the filtered ones. No components
// and no strict: every entity. Filter errors fail the whole request.

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas, catchesUp(), clusterACL(auth.OpDescribeConfigs))
}

func handleDescribeClientQuotas(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !s.clusterAllowed(c, kmsg.DescribeClientQuotas) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuth)
		return resp, nil
	}
	if err := checkQuotaFilter(req.Components); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err)
		return resp, nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{} // not null: the matches are spliced in
	out := &describeClientQuotasResponse{DescribeClientQuotasResponse: resp, listing: s.quotaListing(s.Store.Snapshot())}
	if len(req.Components) == 0 && !req.Strict {
		out.all = true
		return out, nil
	}
	parts := make([]quota.Component, 0, 3)
	for i := range out.listing.entities {
		if quotaFilterMatches(req.Components, req.Strict, out.listing.entities[i].entity, parts) {
			out.matched = append(out.matched, i)
		}
	}
	return out, nil
}

// describeClientQuotasResponse is a DescribeClientQuotasResponse whose
// entries are spliced in from a quotaListing: every entity's, as the
// listing keeps them encoded, or those a filter matched, encoded here.
type describeClientQuotasResponse struct {
	*kmsg.DescribeClientQuotasResponse // Entries stays empty; the rest is encoded as is
	listing                            *quotaListing
	all                                bool  // every entity of the listing
	matched                            []int // else these, by index in the listing
}

func (r *describeClientQuotasResponse) AppendTo(dst []byte) []byte {
	if !r.all {
		// Filtered answers are encoded here: a filter naming one entity
		// should not cost encoding them all.
		enc := newQuotaEntryEncoder(r.Version)
		return wire.AppendArrayResponse(dst, r.DescribeClientQuotasResponse, len(r.matched), func(dst []byte, i int) []byte {
			return enc.append(dst, &r.listing.entities[r.matched[i]])
		})
	}
	enc := r.listing.encoded(r.Version)
	dst, entries := wire.OpenTrailingArray(r.DescribeClientQuotasResponse.AppendTo(dst), r.IsFlexible(), len(r.listing.entities))
	dst = append(wire.Grow(dst, len(enc)+1), enc...)
	return entries.Close(dst)
}

// quotaListing is every entity of one Quotas map of the metadata snapshot,
// parsed, and encoded as the entries of a DescribeClientQuotas answer
// matching everything, per response version on first use. The store
// replaces the map whenever a quota changes and shares it between
// snapshots otherwise, so a listing serves until the next quota change:
// describing 100,000 entities is then one copy of their encoding instead of
// parsing, sorting and encoding each.
type quotaListing struct {
	quotas   map[string]map[string]float64 // the map it lists; read only
	once     sync.Once
	entities []listedQuota    // in no particular order, as in Kafka (clients sort if they want to)
	versions [2]encodedQuotas // by response version: v0 and v1 are served
}

// listedQuota is one entity with its values, copied out of the store's
// map so that encoding compares no key strings: values[i] is the value of
// sortedKeys[i] if bit i of set is.
type listedQuota struct {
	entity quota.Entity
	values [len(sortedKeys)]float64
	set    uint8
	// other is the store's map instead, for an entity with a key that is
	// none of sortedKeys (written by something other than kbroker).
	other map[string]float64
}

// sortedKeys are every quota key Kafka has, sorted.
var sortedKeys = [...]string{quota.ConnectionCreationRate, quota.ConsumerByteRate, quota.ControllerMutationRate, quota.ProducerByteRate, quota.RequestPercentage}

func listQuota(e quota.Entity, values map[string]float64) listedQuota {
	q := listedQuota{entity: e}
	for k, v := range values {
		i := slices.Index(sortedKeys[:], k)
		if i < 0 {
			return listedQuota{entity: e, other: values}
		}
		q.values[i], q.set = v, q.set|1<<i
	}
	return q
}

// appendValues appends the entity's values to dst, sorted by key.
func (q *listedQuota) appendValues(dst []kmsg.DescribeClientQuotasResponseEntryValue) []kmsg.DescribeClientQuotasResponseEntryValue {
	add := func(k string, v float64) {
		e := kmsg.NewDescribeClientQuotasResponseEntryValue()
		e.Key, e.Value = k, v
		dst = append(dst, e)
	}
	if q.other != nil {
		for _, k := range slices.Sorted(maps.Keys(q.other)) {
			add(k, q.other[k])
		}
		return dst
	}
	for i, k := range sortedKeys {
		if q.set&(1<<i) != 0 {
			add(k, q.values[i])
		}
	}
	return dst
}

// encodedQuotas is every entry of a listing encoded, back to back.
type encodedQuotas struct {
	once  sync.Once
	bytes []byte
}

// quotaListing returns the listing of snap's quota entities, reusing the
// last one built while the map is the same.
func (s *Server) quotaListing(snap *meta.Snapshot) *quotaListing {
	l := s.quotaListings.Load()
	if l == nil || reflect.ValueOf(l.quotas).UnsafePointer() != reflect.ValueOf(snap.QuotaOverrides()).UnsafePointer() {
		l = &quotaListing{quotas: snap.QuotaOverrides()}
		s.quotaListings.Store(l)
	}
	l.once.Do(l.parse)
	return l
}

// parse lists the entities; paths that do not parse are left out.
func (l *quotaListing) parse() {
	type stored struct {
		path   string
		values map[string]float64
	}
	all := make([]stored, 0, len(l.quotas))
	for p, values := range l.quotas {
		all = append(all, stored{p, values})
	}
	listed := make([]listedQuota, len(all))
	parsed := make([]bool, len(all))
	inChunks(len(all), chunksFor(len(all)), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if e, err := quota.ParseEntity(all[i].path); err == nil {
				listed[i], parsed[i] = listQuota(e, all[i].values), true
			}
		}
	})
	l.entities = listed
	if slices.Contains(parsed, false) {
		l.entities = listed[:0]
		for i := range listed {
			if parsed[i] {
				l.entities = append(l.entities, listed[i])
			}
		}
	}
}

// encoded returns every entry encoded for a response of version v.
func (l *quotaListing) encoded(v int16) []byte {
	enc := &l.versions[v]
	enc.once.Do(func() {
		chunks := make([][]byte, chunksFor(len(l.entities)))
		inChunks(len(l.entities), len(chunks), func(c, lo, hi int) {
			entryEnc := newQuotaEntryEncoder(v)
			var buf []byte
			for i := lo; i < hi; i++ {
				buf = entryEnc.append(buf, &l.entities[i])
				if i == lo {
					// Entries are alike in size: one allocation for the chunk.
					buf = slices.Grow(buf, (hi-lo-1)*len(buf)*5/4)
				}
			}
			chunks[c] = buf
		})
		enc.bytes = chunks[0]
		if len(chunks) > 1 {
			enc.bytes = slices.Concat(chunks...)
		}
	})
	return enc.bytes
}

// quotaEntryEncoder encodes DescribeClientQuotas entries one at a time.
type quotaEntryEncoder struct {
	enc   *wire.ElementEncoder
	entry *kmsg.DescribeClientQuotasResponseEntry
	parts []quota.Component
}

func newQuotaEntryEncoder(version int16) *quotaEntryEncoder {
	one := kmsg.NewPtrDescribeClientQuotasResponse()
	one.Version = version
	one.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	enc := wire.NewElementEncoder(one, 1)
	one.Entries = append(one.Entries, kmsg.NewDescribeClientQuotasResponseEntry())
	return &quotaEntryEncoder{enc: enc, entry: &one.Entries[0]}
}

// append appends q's entry: its entity's parts in Kafka's order, its values
// sorted by key.
func (e *quotaEntryEncoder) append(dst []byte, q *listedQuota) []byte {
	e.entry.Entity = e.entry.Entity[:0]
	e.parts = q.entity.AppendComponents(e.parts[:0])
	for _, c := range e.parts {
		re := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		re.Type, re.Name = c.Type, c.Name
		e.entry.Entity = append(e.entry.Entity, re)
	}
	e.entry.Values = q.appendValues(e.entry.Values[:0])
	return append(dst, e.enc.Element()...)
}

// inChunks runs fn over [0, n) cut in k contiguous chunks, in parallel.
func inChunks(n, k int, fn func(chunk, lo, hi int)) {
	if k == 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for c := range k {
		lo, hi := chunkBounds(n, k, c)
		wg.Go(func() { fn(c, lo, hi) })
	}
	wg.Wait()
}

// chunksFor is how many chunks to build a listing of n entities in: one per
// processor. Building a listing of 100,000 entities is mostly waiting on
// memory (the store's maps are all over the heap) while the client waits
// for the answer, so it is spread over the cores; the work is the same.
// Small listings are not worth a goroutine.
func chunksFor(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n/1024)) }

// chunkBounds is chunk c of [0, n) cut in k.
func chunkBounds(n, k, c int) (lo, hi int) { return c * n / k, (c + 1) * n / k }

// checkQuotaFilter applies Kafka's rules for a filter's components.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) error {
	seen := map[string]bool{}
	for _, c := range components {
		switch c.EntityType {
		case "":
			return newError(kerr.InvalidRequest, "Invalid empty entity type in filter")
		case quota.TypeUser, quota.TypeClientID, quota.TypeIP:
		default:
			return newError(kerr.UnsupportedVersion, fmt.Sprintf("Custom entity type '%s' not supported", c.EntityType))
		}
		if seen[c.EntityType] {
			return newError(kerr.InvalidRequest, fmt.Sprintf("Duplicate filter component entity type: %s", c.EntityType))
		}
		seen[c.EntityType] = true
		switch {
		case c.MatchType == kmsg.QuotasMatchTypeExact && c.Match == nil:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Request specified exact match for entity type %s but no match string", c.EntityType))
		case c.MatchType == kmsg.QuotasMatchTypeDefault && c.Match != nil:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Request specified default match for entity type %s but also a match string", c.EntityType))
		case c.MatchType == kmsg.QuotasMatchTypeAny && c.Match != nil:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Request specified any match for entity type %s but also a match string", c.EntityType))
		case c.MatchType > kmsg.QuotasMatchTypeAny || c.MatchType < 0:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Unknown match type %d", c.MatchType))
		}
	}
	if seen[quota.TypeIP] && (seen[quota.TypeUser] || seen[quota.TypeClientID]) {
		return newError(kerr.InvalidRequest, "Invalid entity filter component combination: ip cannot be combined with user or client-id")
	}
	return nil
}

// quotaFilterMatches applies a validated filter to one entity; parts is
// scratch space, so that matching 100,000 entities allocates nothing.
func quotaFilterMatches(components []kmsg.DescribeClientQuotasRequestComponent, strict bool, e quota.Entity, parts []quota.Component) bool {
	parts = e.AppendComponents(parts[:0])
	for _, c := range components {
		i := slices.IndexFunc(parts, func(p quota.Component) bool { return p.Type == c.EntityType })
		if i < 0 {
			return false
		}
		name := parts[i].Name
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if name == nil || *name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if name != nil {
				return false
			}
		}
	}
	return !strict || len(parts) == len(components)
}
