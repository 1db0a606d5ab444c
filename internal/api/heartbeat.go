package api

// Heartbeat (key 12), v0–v4.
//
// Keeps a classic group member's session alive; REBALANCE_IN_PROGRESS
// tells it to rejoin. Answered NONE while the coordinator loads, as Kafka
// does, so members do not rediscover it for nothing.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.Heartbeat, 0, 4, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if code := s.groupRefusal(c, req.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	out := s.Groups.Heartbeat(ctx, req)
	out.Version = req.Version
	return out, nil
}
