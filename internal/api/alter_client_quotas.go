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
