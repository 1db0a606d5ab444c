package api

// LeaveGroup (key 13), v0–v5.
//
// Members leave a classic group, which rebalances. v3+ names several
// members, by member id or by group.instance.id (KIP-345); each gets its
// own error.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.LeaveGroup, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if code := s.groupRefusal(c, req.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	out := s.Groups.Leave(ctx, req)
	out.Version = req.Version
	return out, nil
}
