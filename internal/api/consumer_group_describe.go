package api

// ConsumerGroupDescribe (key 69), v0–v1.
//
// A KIP-848 consumer group's state, epochs, assignor and members with
// their current and target assignments (internal/group); v1 adds the
// member type. Needs GROUP DESCRIBE per group. An unknown group, or a
// classic one, is GROUP_ID_NOT_FOUND. Authorized operations are
// reported when asked.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		var d kmsg.ConsumerGroupDescribeResponseGroup
		switch {
		case !s.allowed(c, auth.OpDescribe, auth.ResourceGroup, id):
			d = kmsg.NewConsumerGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
		case id == "":
			d = kmsg.NewConsumerGroupDescribeResponseGroup()
			d.ErrorCode = kerr.InvalidGroupID.Code
		case !s.groupsServed():
			d = kmsg.NewConsumerGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = id, codeNoGroupCoordinator
		default:
			d = s.Groups.ConsumerDescribe(ctx, id)
		}
		d.AuthorizedOperations = notRequestedOps
		if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
