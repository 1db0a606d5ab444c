package api

// IncrementalAlterConfigs (key 44), v0–v1 (KIP-339).
//
// Applies per-key operations to a resource's overrides: SET, DELETE (of an
// absent key: no-op), APPEND and SUBTRACT (LIST keys only; APPEND starts
// from the default when there is no override). TOPIC and BROKER changes go
// through validation, the alter-config policy and one store transaction per
// resource; BROKER_LOGGER changes the receiving broker's log levels.
// validate_only changes nothing. Errors are per resource; a resource listed
// twice, or a key listed twice in one resource, gets INVALID_REQUEST.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs, catchesUp()) }

func handleIncrementalAlterConfigs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	ops := make([][]configOp, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{rr.ResourceType, rr.ResourceName}
		for _, cfg := range rr.Configs {
			ops[i] = append(ops[i], configOp{name: cfg.Name, op: cfg.Op, value: cfg.Value})
		}
	}
	for i, err := range s.alterResources(ctx, c, keys, ops, false, req.ValidateOnly) {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = keys[i].typ, keys[i].name
		res.ErrorCode, res.ErrorMessage = errorCode(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// alterResources applies each resource's ops independently and returns one
// error (or nil) per resource, in request order. It serves both alter APIs.
func (s *Server) alterResources(ctx context.Context, c *wire.Conn, keys []resourceKey, ops [][]configOp, replace, validateOnly bool) []error {
	count := map[resourceKey]int{}
	for _, k := range keys {
		count[k]++
	}
	errs := make([]error, len(keys))
	for i, k := range keys {
		res := configResources[k.typ]
		switch {
		case count[k] > 1:
			errs[i] = newError(kerr.InvalidRequest, "Each resource must appear at most once.")
		case res == nil:
			errs[i] = newError(kerr.InvalidRequest, fmt.Sprintf("Unknown resource type %d", k.typ))
		default:
			if errs[i] = s.configResourceAllowed(c, k.typ, k.name, auth.OpAlterConfigs); errs[i] != nil {
				break
			}
			if errs[i] = checkDuplicateKeys(ops[i]); errs[i] == nil {
				errs[i] = res.alter(ctx, s, c, k.name, ops[i], replace, validateOnly)
			}
		}
	}
	return errs
}
