package api

// SyncGroup (key 14), v0–v5.
//
// The leader sends the generation's assignment; every member waits, on its
// own connection, for its share. v5 carries the protocol type and name,
// checked against the group's (KIP-559).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.SyncGroup, 0, 5, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if code := s.groupRefusal(c, req.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	out, parked := s.Groups.Sync(ctx, req)
	r.Parked += parked
	out.Version = req.Version
	return out, nil
}
