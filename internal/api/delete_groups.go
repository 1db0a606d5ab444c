package api

// DeleteGroups (key 42), v0–v2.
//
// Deletes empty groups with their committed offsets (NON_EMPTY_GROUP while
// a group has members, GROUP_ID_NOT_FOUND for an unknown one). Needs GROUP
// DELETE per group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DeleteGroups, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		switch {
		case !s.allowed(c, auth.OpDelete, auth.ResourceGroup, id):
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !s.groupsServed():
			rg.ErrorCode = codeNoGroupCoordinator
		default:
			rg.ErrorCode = s.Groups.Delete(ctx, id)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
