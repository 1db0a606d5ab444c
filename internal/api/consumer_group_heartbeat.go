package api

// ConsumerGroupHeartbeat (key 68), v0–v1.
//
// The KIP-848 consumer protocol: a member joins (epoch 0), heartbeats
// with its epoch and owned partitions, and leaves (-1, or -2 for a
// static member leaving for now); the coordinator answers with its epoch
// and, when it changed, its assignment (internal/group). Needs GROUP
// READ. A regex subscription resolves only to topics the principal may
// DESCRIBE. v1 (KIP-1082): the client makes its member id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if code := s.groupRefusal(c, req.Group); code != 0 {
		resp.ErrorCode = code
		if code == kerr.GroupAuthorizationFailed.Code {
			msg := "The client is not authorized to access group " + req.Group + "."
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	describable := func(topic string) bool { return s.allowed(c, auth.OpDescribe, auth.ResourceTopic, topic) }
	out := s.Groups.ConsumerHeartbeat(ctx, req, groupClient(c, r), describable)
	out.Version = req.Version
	return out, nil
}
