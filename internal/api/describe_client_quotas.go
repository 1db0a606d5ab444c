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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas) }

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
	snap := s.Store.Snapshot()
	// Entities come in no particular order, as in Kafka (clients sort if
	// they want to): sorting 100,000 paths would cost more than the rest.
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(snap.Quotas))
	for p := range snap.Quotas {
		e, err := entityFromPath(p)
		if err != nil || !quotaFilterMatches(req.Components, req.Strict, e) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, comp := range e.components() {
			re := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			re.Type, re.Name = comp.typ, comp.name
			entry.Entity = append(entry.Entity, re)
		}
		values := snap.Quotas[p]
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// checkQuotaFilter applies Kafka's rules for a filter's components.
func checkQuotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) error {
	seen := map[string]bool{}
	for _, c := range components {
		switch c.EntityType {
		case "":
			return newError(kerr.InvalidRequest, "Invalid empty entity type in filter")
		case entityUser, entityClientID, entityIP:
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
	if seen[entityIP] && (seen[entityUser] || seen[entityClientID]) {
		return newError(kerr.InvalidRequest, "Invalid entity filter component combination: ip cannot be combined with user or client-id")
	}
	return nil
}

// quotaFilterMatches applies a validated filter to one entity.
func quotaFilterMatches(components []kmsg.DescribeClientQuotasRequestComponent, strict bool, e quotaEntity) bool {
	parts := map[string]*string{}
	for _, c := range e.components() {
		parts[c.typ] = c.name
	}
	for _, c := range components {
		name, ok := parts[c.EntityType]
		if !ok {
			return false
		}
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
