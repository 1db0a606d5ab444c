package api

// AlterConfigs (key 33), v0–v2.
//
// Replaces a TOPIC's, BROKER's or GROUP's whole set of dynamic overrides with the
// keys given (keys left out are removed). Every key is validated, the
// alter-config policy consulted, and the new set written in one store
// transaction: all of a resource's changes apply or none do, and resources
// are independent. validate_only runs every check and changes nothing. A
// resource listed twice gets INVALID_REQUEST on both copies. BROKER_LOGGER
// needs IncrementalAlterConfigs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/dynconfig"
	"kbroker/internal/wire"
)

func init() { register(kmsg.AlterConfigs, 0, 2, handleAlterConfigs, catchesUp()) }

func handleAlterConfigs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	ops := make([][]dynconfig.Op, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{rr.ResourceType, rr.ResourceName}
		for _, cfg := range rr.Configs {
			ops[i] = append(ops[i], dynconfig.Op{Name: cfg.Name, Kind: kmsg.IncrementalAlterConfigOpSet, Value: cfg.Value})
		}
	}
	for i, err := range s.alterResources(ctx, c, keys, ops, true, req.ValidateOnly) {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = keys[i].typ, keys[i].name
		res.ErrorCode, res.ErrorMessage = resourceError(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}
