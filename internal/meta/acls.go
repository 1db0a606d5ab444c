package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"kbroker/internal/auth"
)

// ACLs live one resource pattern per key, as ZooKeeper-era Kafka kept them
// under /kafka-acl/<Type>/<name>:
//
//	acls/<RESOURCE_TYPE>/<PATTERN_TYPE>/<escaped resource name>
//
// e.g. acls/TOPIC/PREFIXED/orders- holding a JSON array of entries
// {"principal","host","operation","permission"} with Kafka's enum names, so
// an operator can read them in the store. An empty list removes the key.
const prefixACLs = "acls/"

type aclEntryJSON struct {
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Operation  string `json:"operation"`
	Permission string `json:"permission"`
}

// aclKey is the key of the resource pattern of a.
func aclKey(a auth.ACL) string {
	return prefixACLs + a.ResourceType.String() + "/" + a.PatternType.String() + "/" + escape(a.ResourceName)
}

// parseACLKey reads the resource pattern back from a key.
func parseACLKey(key string) (rt auth.ResourceType, pt auth.PatternType, name string, ok bool) {
	rest, found := strings.CutPrefix(key, prefixACLs)
	if !found {
		return 0, 0, "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[2] == "" {
		return 0, 0, "", false
	}
	var err error
	if rt, err = auth.ParseResourceType(parts[0]); err != nil {
		return 0, 0, "", false
	}
	if pt, err = auth.ParsePatternType(parts[1]); err != nil {
		return 0, 0, "", false
	}
	return rt, pt, unescape(parts[2]), true
}

func decodeACLs(key string, raw []byte) ([]auth.ACL, error) {
	rt, pt, name, ok := parseACLKey(key)
	if !ok {
		return nil, nil
	}
	var entries []aclEntryJSON
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	out := make([]auth.ACL, 0, len(entries))
	for _, e := range entries {
		op, err := auth.ParseOperation(e.Operation)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", key, err)
		}
		perm, err := auth.ParsePermission(e.Permission)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", key, err)
		}
		out = append(out, auth.ACL{ResourceType: rt, PatternType: pt, ResourceName: name,
			Principal: e.Principal, Host: e.Host, Operation: op, Permission: perm})
	}
	return out, nil
}

func encodeACLs(acls []auth.ACL) []byte {
	entries := make([]aclEntryJSON, len(acls))
	for i, a := range acls {
		entries[i] = aclEntryJSON{Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.Permission.String()}
	}
	raw, _ := json.Marshal(entries)
	return raw
}

// ACLsDelta holds the resource patterns a batch wrote, by store key; nil:
// removed.
type ACLsDelta map[string][]auth.ACL

// The ACL sub-image is a plain map copied on change: the authorizer
// rebuilds its index from every ACL on each change anyway.
var aclsKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		if !hasPrefix(c.Key, prefixACLs) {
			return false, nil
		}
		if c.Deleted {
			setDelta(&d.ACLs, c.Key, nil)
			return true, nil
		}
		acls, err := decodeACLs(c.Key, c.Value)
		if err == nil && acls != nil {
			setDelta(&d.ACLs, c.Key, acls)
		}
		return true, err
	},
	apply: func(next *Snapshot, d *Delta) {
		if len(d.ACLs) > 0 {
			next.acls = cloneWith(next.acls, d.ACLs, func(l []auth.ACL) bool { return l == nil })
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.ACLs, later.ACLs) },
}

// ACLsByPattern holds every ACL by the store key of its resource pattern.
// The map is shared: never modify it.
func (s *Snapshot) ACLsByPattern() map[string][]auth.ACL { return s.acls }

// AllACLs lists every ACL of the snapshot (in no particular order).
func (s *Snapshot) AllACLs() []auth.ACL {
	var out []auth.ACL
	for _, list := range s.acls {
		out = append(out, list...)
	}
	return out
}

// ChangedACLs reports whether any ACL changed.
func (e Event) ChangedACLs() bool { return len(e.delta().ACLs) > 0 }

// CreateACLs stores acls in one transaction where the backend allows (in
// chunks under etcd's --max-txn-ops and --max-request-bytes, batch.go: a
// failure part-way leaves the first chunks stored, and retrying is
// harmless). An ACL already stored is left as it is (CreateAcls is
// idempotent in Kafka). The caller validated them. One resource pattern
// keeps all its ACLs in one key, so an ACL that would take that key over
// etcd's request size fails the call there with ErrTooLarge.
func (s *Store) CreateACLs(ctx context.Context, acls []auth.ACL) error {
	// Per ACL: at most one read and one write (of its resource's key).
	_, err := s.updateChunks(ctx, len(acls), 1, func(tx Tx, lo, hi int) error {
		return addACLs(tx, acls[lo:hi])
	}, nil)
	return err
}

func addACLs(tx Tx, acls []auth.ACL) error {
	byKey := map[string][]auth.ACL{}
	var order []string
	for _, a := range acls {
		key := aclKey(a)
		list, seen := byKey[key]
		if !seen {
			order = append(order, key)
			if raw, ok := tx.Get(key); ok {
				var err error
				if list, err = decodeACLs(key, raw); err != nil {
					return err
				}
			}
		}
		if !slices.Contains(list, a) {
			list = append(list, a)
			byKey[key] = list
		} else if !seen {
			byKey[key] = list
		}
	}
	for _, key := range order {
		raw, had := tx.Get(key)
		next := encodeACLs(byKey[key])
		if !had || string(raw) != string(next) {
			tx.Put(key, next)
		}
	}
	return nil
}

// DeleteACLs removes every ACL that matches one of the filters, and returns
// for each filter the ACLs it matched (an ACL matched by two filters is
// listed under both, as it existed when each was applied). One transaction
// where the backend allows; under etcd's --max-txn-ops and
// --max-request-bytes, resource keys are visited in order in as many
// transactions as their writes need, each one exact for the keys it covers
// (batch.go).
func (s *Store) DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]auth.ACL, error) {
	matched := make([][]auth.ACL, len(filters))
	maxWrites := 0 // no limit
	if l, ok := s.backend.(txnLimiter); ok {
		maxWrites = l.txnOpsLimit() - 1 // each written key adds a compare to the List's one
	}
	var last int64
	after := "" // keys up to this one are done
	for {
		var chunk [][]auth.ACL
		var next string
		var more bool
		from := after
		rev, err := s.backend.Update(ctx, func(tx Tx) error { // may run again: only results of the last run count
			chunk = make([][]auth.ACL, len(filters))
			var err error
			next, more, err = deleteMatchingACLs(tx, filters, chunk, from, maxWrites)
			return err
		})
		if err != nil {
			if last != 0 {
				s.waitFor(ctx, last) // what did commit is in effect before the caller answers
			}
			return nil, err
		}
		for i := range matched {
			matched[i] = append(matched[i], chunk[i]...)
		}
		last, after = max(last, rev), next
		if !more {
			break
		}
	}
	if last != 0 {
		return matched, s.waitFor(ctx, last)
	}
	return matched, nil
}

// deleteMatchingACLs applies filters to the resource keys after from, in
// order, adding what each filter matched to matched, until maxWrites keys
// were written (0: no limit) or the next write would not fit in the
// transaction. It returns the last key it finished and whether keys remain.
func deleteMatchingACLs(tx Tx, filters []auth.Filter, matched [][]auth.ACL, from string, maxWrites int) (done string, more bool, err error) {
	all := tx.List(prefixACLs)
	keys := make([]string, 0, len(all))
	for k := range all {
		if k > from {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	done, writes := from, 0
	for _, key := range keys {
		if maxWrites > 0 && writes == maxWrites {
			return done, true, nil
		}
		acls, err := decodeACLs(key, all[key])
		if err != nil {
			return "", false, err
		}
		kept, hits := filterACLs(acls, filters)
		if len(kept) < len(acls) {
			err := writeIfFits(tx, func() error {
				if len(kept) == 0 {
					tx.Delete(key)
				} else {
					tx.Put(key, encodeACLs(kept))
				}
				return nil
			})
			switch {
			case errors.Is(err, ErrTooLarge) && writes > 0:
				return done, true, nil // the next transaction starts at key
			case err != nil:
				// A shrunk list too large alone: etcd's limit is now below
				// what it once accepted for this key.
				return "", false, fmt.Errorf("%s: %w", key, err)
			}
			writes++
		}
		for i := range hits {
			matched[i] = append(matched[i], hits[i]...)
		}
		done = key
	}
	return done, false, nil
}

// filterACLs splits acls into those no filter matches and, per filter,
// those it matches.
func filterACLs(acls []auth.ACL, filters []auth.Filter) (kept []auth.ACL, hits [][]auth.ACL) {
	hits = make([][]auth.ACL, len(filters))
	for _, a := range acls {
		hit := false
		for i, f := range filters {
			if f.Matches(a) {
				hits[i] = append(hits[i], a)
				hit = true
			}
		}
		if !hit {
			kept = append(kept, a)
		}
	}
	return kept, hits
}
