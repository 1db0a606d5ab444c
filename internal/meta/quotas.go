package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Quota overrides live under config/ at the entity paths Kafka kept in
// ZooKeeper, with names already sanitized by the caller (Kafka's Sanitizer):
//
//	config/users/<user>                   config/users/<user>/clients/<client>
//	config/users/<default>                config/users/<default>/clients/<default>
//	config/clients/<client>               config/clients/<default>
//	config/ips/<ip>                       config/ips/<default>
//
// The value is a JSON object of quota key to number.
const prefixConfig = "config/"

// QuotaPath reports whether path (without "config/") has the shape of a
// quota entity.
func QuotaPath(path string) bool {
	parts := strings.Split(path, "/")
	switch {
	case len(parts) == 2 && (parts[0] == "users" || parts[0] == "clients" || parts[0] == "ips"):
		return parts[1] != ""
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients":
		return parts[1] != "" && parts[3] != ""
	}
	return false
}

func quotaPathOf(key string) (string, bool) {
	path, ok := strings.CutPrefix(key, prefixConfig)
	if !ok || strings.HasPrefix(path, "topics/") || strings.HasPrefix(path, "brokers/") || !QuotaPath(path) {
		return "", false
	}
	return path, true
}

// UpdateQuotas changes quota entities in one transaction where the backend
// allows (one durable commit for a whole AlterClientQuotas request on bbolt;
// chunks under etcd's --max-txn-ops and --max-request-bytes, batch.go).
// change is called for each path with a copy of that entity's current
// values (empty if none) and returns its new values; an empty result
// removes the entity. An error from change, or an entity too large for one
// etcd transaction (ErrTooLarge), skips that entity only and is returned
// at its index in errs; err is a store failure that wrote nothing. A store failure after some chunks
// committed is in errs of the entities it left unwritten.
func (s *Store) UpdateQuotas(ctx context.Context, paths []string, change func(i int, cur map[string]float64) (map[string]float64, error)) (errs []error, err error) {
	for _, p := range paths {
		if !QuotaPath(p) {
			return nil, fmt.Errorf("not a quota entity path: %q", p)
		}
	}
	errs = make([]error, len(paths))
	// Per entity: one read and one write.
	done, err := s.updateChunks(ctx, len(paths), 1, func(tx Tx, lo, hi int) error {
		for i := lo; i < hi; i++ {
			errs[i] = nil // fn may run again after a conflict
			var entityErr error
			err := updateMap(tx, prefixConfig+paths[i], func(cur map[string]float64) (map[string]float64, error) {
				next, err := change(i, cur)
				entityErr = err
				return next, err
			})
			switch {
			case entityErr != nil:
				errs[i] = entityErr
			case err != nil:
				return err // a stored value that does not decode
			}
		}
		return nil
	}, func(i int, err error) { errs[i] = err })
	if err != nil && done == 0 {
		return nil, err
	}
	for i := done; i < len(paths); i++ {
		errs[i] = err
	}
	return errs, nil
}

// ChangedQuotaPaths lists the quota entities the change touched.
func (e Event) ChangedQuotaPaths() []string { return keysOf(e.delta().Quotas) }

// ChangedQuotas reports whether any quota entity changed.
func (e Event) ChangedQuotas() bool { return len(e.delta().Quotas) > 0 }

// QuotasDelta holds the quota entities a batch wrote, by path; nil:
// removed.
type QuotasDelta map[string]map[string]float64

// The quota sub-image is a plain map copied on change: the quota manager
// compiles the whole set into its own index, and DescribeClientQuotas
// caches its listing for as long as the map is the same.
var quotasKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		path, ok := quotaPathOf(c.Key)
		if !ok {
			return false, nil
		}
		var q map[string]float64
		if !c.Deleted {
			if err := json.Unmarshal(c.Value, &q); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
			if q == nil {
				q = map[string]float64{}
			}
		}
		setDelta(&d.Quotas, path, q)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		if len(d.Quotas) > 0 {
			next.quotas = cloneWith(next.quotas, d.Quotas, func(q map[string]float64) bool { return q == nil })
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.Quotas, later.Quotas) },
}

// QuotaOverrides is every quota entity's values by path (e.g.
// "users/alice/clients/c1", "clients/<default>", "ips/10.0.0.1"). The map
// is shared and stays the same object until a quota changes: never modify
// it.
func (s *Snapshot) QuotaOverrides() map[string]map[string]float64 { return s.quotas }

// QuotaOverride is one entity's quota values; nil if it has none.
func (s *Snapshot) QuotaOverride(path string) map[string]float64 { return s.quotas[path] }
