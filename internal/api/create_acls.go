package api

// CreateAcls (key 30), v0–v3.
//
// Adds ACL bindings, all valid ones of a request in one store transaction
// (acls/<TYPE>/<PATTERN>/<name>); every broker's authorizer picks them up
// through the store's change notification. One result per creation, in
// order. Invalid bindings get INVALID_REQUEST with Kafka's message (unknown
// or ANY resource type, pattern other than LITERAL/PREFIXED, unknown or ANY
// operation, permission other than ALLOW/DENY, CLUSTER named other than
// kafka-cluster, empty name, principal without "Type:"). An existing
// binding is accepted without change (idempotent). v0 is LITERAL only
// (it has no pattern field). Needs ALTER on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.CreateACLs, 0, 3, handleCreateACLs, catchesUp(), clusterACL(auth.OpAlter)) }

func handleCreateACLs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(req.Creations))
	var valid []auth.ACL
	var validIdx []int
	allowed := s.Authz != nil && s.clusterAllowed(c, kmsg.CreateACLs)
	for i, cr := range req.Creations {
		a := auth.ACL{ResourceType: auth.ResourceType(cr.ResourceType), ResourceName: cr.ResourceName,
			PatternType: auth.PatternType(cr.ResourcePatternType), Principal: cr.Principal, Host: cr.Host,
			Operation: auth.Operation(cr.Operation), Permission: auth.Permission(cr.PermissionType)}
		if req.Version == 0 {
			a.PatternType = auth.PatternLiteral
		}
		switch {
		case s.Authz == nil:
			errs[i] = errSecurityDisabled
		case !allowed:
			errs[i] = errClusterAuth
		default:
			if errs[i] = auth.ValidateNew(a); errs[i] == nil {
				valid = append(valid, a)
				validIdx = append(validIdx, i)
			}
		}
	}
	if len(valid) > 0 {
		err := s.Store.CreateACLs(ctx, valid)
		for j, i := range validIdx {
			errs[i] = err
			if err == nil {
				s.auditACL(c, "acl created", valid[j])
			}
		}
	}
	for _, err := range errs {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(err)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
