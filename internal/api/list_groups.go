package api

// ListGroups (key 16), v0–v5.
//
// The groups this broker coordinates: all of them with CLUSTER DESCRIBE,
// otherwise those the principal may DESCRIBE (silently filtered). v4
// filters by state (KIP-518), v5 by type ("classic" or "consumer").
// A coordinator still loading is reported as COORDINATOR_LOAD_IN_PROGRESS
// beside the groups of the others.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ListGroups, 0, 5, handleListGroups) }

func handleListGroups(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if !s.groupsServed() {
		return resp, nil
	}
	groups, loading := s.Groups.List(ctx, req.StatesFilter, req.TypesFilter)
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	all := s.allowed(c, auth.OpDescribe, auth.ResourceCluster, auth.ClusterName)
	for _, g := range groups {
		if !all && !s.allowed(c, auth.OpDescribe, auth.ResourceGroup, g.Group) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Group, g.ProtocolType, g.State, g.Type
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
