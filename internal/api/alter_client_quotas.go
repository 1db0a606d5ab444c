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

	"kbroker/internal/auth"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas, catchesUp(), clusterACL(auth.OpAlterConfigs))
}

func handleAlterClientQuotas(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	entities := make([]quota.Entity, len(req.Entries))
	errs := make([]error, len(req.Entries))
	count := map[string]int{}
	for i, entry := range req.Entries {
		var comps []quota.Component
		for _, e := range entry.Entity {
			comps = append(comps, quota.Component{Type: e.Type, Name: e.Name})
		}
		entities[i], errs[i] = quota.EntityOf(comps)
		if errs[i] == nil {
			count[entities[i].Path()]++
		}
	}
	allowed := s.clusterAllowed(c, kmsg.AlterClientQuotas)
	// Every valid entity is written in one store transaction, so a request
	// setting many entities costs one durable commit.
	var changes []quotaChange
	var at []int
	for i, entry := range req.Entries {
		switch {
		case !allowed:
			errs[i] = errClusterAuth
		case errs[i] != nil:
		case count[entities[i].Path()] > 1:
			errs[i] = newError(kerr.InvalidRequest, "Duplicate quota entity in request")
		default:
			qc := quotaChange{path: entities[i].Path()}
			for _, op := range entry.Ops {
				qc.ops = append(qc.ops, quotaOp{key: op.Key, value: op.Value, remove: op.Remove})
			}
			changes = append(changes, qc)
			at = append(at, i)
		}
	}
	for j, err := range s.alterQuotas(ctx, c, changes, req.ValidateOnly) {
		errs[at[j]] = err
	}
	for i, entry := range req.Entries {
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

// quotaChange is the ops requested for one entity.
type quotaChange struct {
	path string
	ops  []quotaOp
}

// alterQuotas applies each entity's ops (also used by the USER and CLIENT
// config resources, one entity at a time): each entity is validated on its
// own, then all valid ones are written in one transaction. It returns one
// error (or nil) per change.
func (s *Server) alterQuotas(ctx context.Context, c *wire.Conn, changes []quotaChange, validateOnly bool) []error {
	errs := make([]error, len(changes))
	var paths []string
	var at []int
	for i, ch := range changes {
		if errs[i] = checkQuotaOps(ch.path, ch.ops); errs[i] == nil {
			paths = append(paths, ch.path)
			at = append(at, i)
		}
	}
	if len(paths) == 0 {
		return errs
	}
	before := make([]map[string]float64, len(paths))
	after := make([]map[string]float64, len(paths))
	entityErrs, err := s.Store.UpdateQuotas(ctx, paths, func(j int, cur map[string]float64) (map[string]float64, error) {
		next := map[string]float64{}
		for k, v := range cur {
			next[k] = v
		}
		for _, op := range changes[at[j]].ops {
			if op.remove {
				delete(next, op.key)
			} else {
				next[op.key] = op.value
			}
		}
		if err := s.Quotas.ValidateChanges(quota.Overrides{paths[j]: next}); err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		before[j], after[j] = cur, next
		return next, nil
	})
	for j, i := range at {
		switch {
		case err != nil:
			errs[i] = err
		case errors.Is(entityErrs[j], errValidateOnly):
		case entityErrs[j] != nil:
			errs[i] = entityErrs[j]
		default:
			s.auditQuotaChange(c, paths[j], before[j], after[j])
		}
	}
	return errs
}

// checkQuotaOps validates one entity's ops before anything is written.
func checkQuotaOps(path string, ops []quotaOp) error {
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
			return err
		}
	}
	return nil
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
