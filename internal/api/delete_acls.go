package api

// DeleteAcls (key 31), v0–v3.
//
// Removes every ACL matching each filter (same filter rules as
// DescribeAcls), all filters in one store transaction, and lists per filter
// the bindings it removed. A filter with an UNKNOWN element gets
// INVALID_REQUEST. v0 filters are LITERAL. Needs ALTER on the cluster;
// without an authorizer every filter gets SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DeleteACLs, 0, 3, handleDeleteACLs, catchesUp(), clusterACL(auth.OpAlter)) }

func handleDeleteACLs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	errs := make([]error, len(req.Filters))
	matched := make([][]auth.ACL, len(req.Filters))
	var valid []auth.Filter
	var validIdx []int
	allowed := s.Authz != nil && s.clusterAllowed(c, kmsg.DeleteACLs)
	for i, rf := range req.Filters {
		f := aclFilter(req.Version, rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		switch {
		case s.Authz == nil:
			errs[i] = errSecurityDisabled
		case !allowed:
			errs[i] = errClusterAuth
		default:
			if errs[i] = f.Validate(); errs[i] == nil {
				valid = append(valid, f)
				validIdx = append(validIdx, i)
			}
		}
	}
	if len(valid) > 0 {
		deleted, err := s.Store.DeleteACLs(ctx, valid)
		for j, i := range validIdx {
			errs[i] = err
			if err == nil {
				matched[i] = deleted[j]
			}
		}
		if err == nil {
			for _, list := range deleted {
				for _, a := range list {
					s.auditACL(c, "acl deleted", a)
				}
			}
		}
	}
	for i, err := range errs {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(err)
		for _, a := range matched[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host = a.Principal, a.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
