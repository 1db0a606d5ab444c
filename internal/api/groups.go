package api

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/wire"
)

// groupReadAllowed is the check of every group-membership API: READ on the
// group.
func (s *Server) groupReadAllowed(c *wire.Conn, groupID string) bool {
	return s.allowed(c, auth.OpRead, auth.ResourceGroup, groupID)
}

// groupRefusal is the error of a group-membership request refused before
// it reaches the coordinator (GROUP READ denied, no coordinator here), or
// 0.
func (s *Server) groupRefusal(c *wire.Conn, groupID string) int16 {
	switch {
	case !s.groupReadAllowed(c, groupID):
		return kerr.GroupAuthorizationFailed.Code
	case !s.groupsServed():
		return codeNoGroupCoordinator
	}
	return 0
}

// groupsServed reports whether this broker runs a group coordinator (an
// embedding without one answers COORDINATOR_NOT_AVAILABLE).
func (s *Server) groupsServed() bool { return s.Groups != nil }

var codeNoGroupCoordinator = kerr.CoordinatorNotAvailable.Code

func groupClient(c *wire.Conn, r *wire.Request) group.Client {
	return group.Client{ID: r.ClientID, Host: "/" + c.RemoteIP()}
}
