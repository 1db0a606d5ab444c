package api

// JoinGroup (key 11), v0–v9.
//
// A member joins (or rejoins) a classic group and waits, on its own
// connection, until the rebalance completes; the leader's answer carries
// every member's metadata. v4+ empty member ids get MEMBER_ID_REQUIRED
// (KIP-394), v5+ static members (KIP-345), v9 SkipAssignment for a static
// leader rejoining (KIP-814). The state machine is internal/group.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.JoinGroup, 0, 9, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, req.MemberID
		if req.Version < 7 {
			empty := ""
			resp.Protocol = &empty
		}
		return resp, nil
	}
	if code := s.groupRefusal(c, req.Group); code != 0 {
		return fail(code)
	}
	out, parked := s.Groups.Join(ctx, req, groupClient(c, r))
	r.Parked += parked
	out.Version = req.Version
	return out, nil
}
