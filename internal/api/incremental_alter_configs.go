package api

// IncrementalAlterConfigs (key 44), v0–v1 (KIP-339).
//
// Applies per-key operations to a resource's overrides: SET, DELETE (of an
// absent key: no-op), APPEND and SUBTRACT (LIST keys only; APPEND starts
// from the default when there is no override). TOPIC, BROKER and GROUP
// changes go through validation, the alter-config policy and one store
// transaction per resource; BROKER_LOGGER changes the receiving broker's
// log levels.
// validate_only changes nothing. Errors are per resource; a resource listed
// twice, or a key listed twice in one resource, gets INVALID_REQUEST.

import (
	"context"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/dynconfig"
	"kbroker/internal/wire"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs, catchesUp()) }

func handleIncrementalAlterConfigs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	ops := make([][]dynconfig.Op, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{rr.ResourceType, rr.ResourceName}
		for _, cfg := range rr.Configs {
			ops[i] = append(ops[i], dynconfig.Op{Name: cfg.Name, Kind: cfg.Op, Value: cfg.Value})
		}
	}
	for i, err := range s.alterResources(ctx, c, keys, ops, false, req.ValidateOnly) {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = keys[i].typ, keys[i].name
		res.ErrorCode, res.ErrorMessage = resourceError(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}
