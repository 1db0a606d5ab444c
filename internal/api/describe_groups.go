package api

// DescribeGroups (key 15), v0–v6.
//
// A group's state, protocol type and members; the protocol and each
// member's metadata and assignment only once the group is Stable. Needs
// GROUP DESCRIBE per group. An unknown group is Dead with no error before
// v6, GROUP_ID_NOT_FOUND from v6 (KIP-1043). v3+ reports the principal's
// authorized operations on the group when asked.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeGroups, 0, 6, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		var d kmsg.DescribeGroupsResponseGroup
		switch {
		case !s.allowed(c, auth.OpDescribe, auth.ResourceGroup, id):
			d = kmsg.NewDescribeGroupsResponseGroup()
			d.Group, d.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
		case !s.groupsServed():
			d = kmsg.NewDescribeGroupsResponseGroup()
			d.Group, d.ErrorCode = id, codeNoGroupCoordinator
		default:
			d = s.Groups.Describe(ctx, req.Version, id)
		}
		d.AuthorizedOperations = notRequestedOps
		if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
