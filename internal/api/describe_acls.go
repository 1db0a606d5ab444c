package api

// DescribeAcls (key 29), v0–v3.
//
// Lists the ACLs a filter selects, grouped by resource pattern (Kafka's
// AclBindingFilter: ANY matches every value of an enum, a null name,
// principal or host matches any; pattern type MATCH selects every pattern
// that applies to the literal name — the name itself, the LITERAL "*"
// wildcard and each PREFIXED prefix of it). v0 has no pattern type and
// means LITERAL; v1 adds it (KIP-290); v2 is flexible; v3 adds the USER
// resource type (KIP-373). Kafka 4 dropped v0; it is still served. Needs
// DESCRIBE on the cluster; without an authorizer configured it answers
// SECURITY_DISABLED.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.DescribeACLs, 0, 3, handleDescribeACLs, catchesUp(), clusterACL(auth.OpDescribe))
}

// errSecurityDisabled answers the ACL APIs on a broker without authorizer.
var errSecurityDisabled = newError(kerr.SecurityDisabled, "No Authorizer is configured on the broker")

func handleDescribeACLs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := aclFilter(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	var err error
	switch {
	case s.Authz == nil:
		err = errSecurityDisabled
	case !s.clusterAllowed(c, kmsg.DescribeACLs):
		err = errClusterAuth
	default:
		err = f.Validate()
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err)
		return resp, nil
	}
	snap := s.Store.Snapshot()
	keys := slices.Sorted(maps.Keys(snap.ACLsByPattern()))
	for _, key := range keys {
		var res *kmsg.DescribeACLsResponseResource
		for _, a := range snap.ACLsByPattern()[key] {
			if !f.Matches(a) {
				continue
			}
			if res == nil {
				r := kmsg.NewDescribeACLsResponseResource()
				r.ResourceType = kmsg.ACLResourceType(a.ResourceType)
				r.ResourceName = a.ResourceName
				r.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
				res = &r
			}
			e := kmsg.NewDescribeACLsResponseResourceACL()
			e.Principal, e.Host = a.Principal, a.Host
			e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.ACLs = append(res.ACLs, e)
		}
		if res != nil {
			resp.Resources = append(resp.Resources, *res)
		}
	}
	return resp, nil
}
