package api

// AlterClientQuotas (key 49), v0–v1 (KIP-546).
//
// Sets or removes quota keys of entities: users, client-ids, (user,
// client-id) pairs, ips, and the default of each. Every entity succeeds or
// fails on its own; within an entity all ops apply or none do, in one store
// transaction. Keys must suit the entity (byte rates, request_percentage
// and controller_mutation_rate for users and clients;
// connection_creation_rate for ips), values must be positive (integral for
// the byte and connection rates). In reserved sub-quota mode a user's
// (user, client-id) quotas may not add up to more than the user's quota.
// validate_only checks and changes nothing. A change reaches every live
// connection's quota at once.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

func init() { register(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	entities := make([]quotaEntity, len(req.Entries))
	errs := make([]error, len(req.Entries))
	count := map[string]int{}
	for i, entry := range req.Entries {
		var comps []wireComponent
		for _, e := range entry.Entity {
			comps = append(comps, wireComponent{e.Type, e.Name})
		}
		entities[i], errs[i] = entityFromWire(comps)
		if errs[i] == nil {
			count[entities[i].path()]++
		}
	}
	allowed := s.clusterAllowed(c, kmsg.AlterClientQuotas)
	for i, entry := range req.Entries {
		if !allowed {
			errs[i] = errClusterAuth
		}
		if errs[i] == nil {
			if count[entities[i].path()] > 1 {
				errs[i] = newError(kerr.InvalidRequest, "Duplicate quota entity in request")
			} else {
				var ops []quotaOp
				for _, op := range entry.Ops {
					ops = append(ops, quotaOp{key: op.Key, value: op.Value, remove: op.Remove})
				}
				errs[i] = s.alterQuota(ctx, c, entities[i].path(), ops, req.ValidateOnly)
			}
		}
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode, re.ErrorMessage = errorCode(errs[i])
		for _, e := range entry.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = e.Type, e.Name
			re.Entity = append(re.Entity, ee)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// quotaOp sets or removes one key.
type quotaOp struct {
	key    string
	value  float64
	remove bool
}

// alterQuota applies ops to one entity (also used by the USER and CLIENT
// config resources): validate each op, then in one transaction compute the
// new values, check the whole set (reserved mode), and write.
func (s *Server) alterQuota(ctx context.Context, c *wire.Conn, path string, ops []quotaOp, validateOnly bool) error {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.key] {
			return newError(kerr.InvalidRequest, fmt.Sprintf("Duplicate quota key %s in entity", op.key))
		}
		seen[op.key] = true
		value := op.value
		if op.remove {
			value = 1 // a removal names a key but carries no value to check
		}
		if err := quota.ValidateKey(path, op.key, value); err != nil {
			return newError(kerr.InvalidRequest, err.Error())
		}
	}
	var before, after map[string]float64
	err := s.Store.UpdateQuota(ctx, path, func(cur map[string]float64, snap *meta.Snapshot) (map[string]float64, error) {
		next := map[string]float64{}
		for k, v := range cur {
			next[k] = v
		}
		for _, op := range ops {
			if op.remove {
				delete(next, op.key)
			} else {
				next[op.key] = op.value
			}
		}
		if err := s.Quotas.ValidateChanges(quota.Overrides{path: next}); err != nil {
			return nil, newError(kerr.InvalidRequest, err.Error())
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		before, after = cur, next
		return next, nil
	})
	if errors.Is(err, errValidateOnly) {
		return nil
	}
	if err == nil {
		s.auditQuotaChange(c, path, before, after)
	}
	return err
}

// auditQuotaChange logs each changed quota key once.
func (s *Server) auditQuotaChange(c *wire.Conn, path string, before, after map[string]float64) {
	for _, k := range unionKeys(before, after) {
		old, hadOld := before[k]
		cur, hasNew := after[k]
		if hadOld == hasNew && old == cur {
			continue
		}
		s.Audit.Info("quota changed", "principal", c.Principal, "client", c.Remote.String(),
			"resource_type", "quota", "resource", path, "key", k,
			"old", orNull(fmt.Sprint(old), hadOld), "new", orNull(fmt.Sprint(cur), hasNew))
	}
}
