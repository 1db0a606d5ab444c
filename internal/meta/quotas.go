package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Quota overrides live under config/ at the seed's entity paths, with names
// already sanitized by the caller (Kafka's Sanitizer):
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

func applyQuota(m map[string]map[string]float64, c Change, path string) error {
	if c.Deleted {
		delete(m, path)
		return nil
	}
	var q map[string]float64
	if err := json.Unmarshal(c.Value, &q); err != nil {
		return fmt.Errorf("decoding %s: %w", c.Key, err)
	}
	m[path] = q
	return nil
}

// UpdateQuota changes one quota entity's overrides in one transaction.
// change gets a copy of the entity's current values (empty if none) and the
// snapshot the change starts from, and returns the new values; an empty
// result removes the entity. An error aborts without writing.
func (s *Store) UpdateQuota(ctx context.Context, path string, change func(cur map[string]float64, snap *Snapshot) (map[string]float64, error)) error {
	if !QuotaPath(path) {
		return fmt.Errorf("not a quota entity path: %q", path)
	}
	key := prefixConfig + path
	return s.Update(ctx, func(tx Tx) error {
		return updateMap(tx, key, func(cur map[string]float64) (map[string]float64, error) {
			return change(cur, s.Snapshot())
		})
	})
}

// ChangedQuotas reports whether any quota entity changed.
func (e Event) ChangedQuotas() bool {
	for _, c := range e.Changes {
		if _, ok := quotaPathOf(c.Key); ok {
			return true
		}
	}
	return false
}
