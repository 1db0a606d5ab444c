package api

// The registry: every API is declared once, in its handler file's init, with
// everything the dispatcher and the cross-cutting checks need to know about
// it. ApiVersions, the catch-up before admin requests and the CLUSTER ACL
// rows all read these declarations, so no separate table keyed by API can
// drift from the handlers. A later attribute (the coordinator a request is
// routed to) is one more option.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

// handlerFunc answers one request. Per-resource problems go in the response
// as error codes; a returned error closes the connection.
type handlerFunc func(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error)

// apiDef is one registered API.
type apiDef struct {
	min, max int16
	handle   handlerFunc
	// catchUp tells whether a request must first bring the snapshot up to
	// the store's current revision (catch_up.go); nil: never.
	catchUp func(s *Server, r *wire.Request) bool
	// clusterOp is what the API needs on the CLUSTER resource when it is
	// authorized as a whole (hasClusterOp; authorize.go).
	clusterOp    auth.Operation
	hasClusterOp bool
}

// apiOption declares one attribute of an API at its registration.
type apiOption func(*apiDef)

// catchesUp: the API reads or validates against metadata another broker
// may just have changed, so every request of it catches up first.
func catchesUp() apiOption {
	return func(d *apiDef) { d.catchUp = func(*Server, *wire.Request) bool { return true } }
}

// catchesUpWhen: the API catches up only for the requests need says.
func catchesUpWhen(need func(s *Server, r *wire.Request) bool) apiOption {
	return func(d *apiDef) { d.catchUp = need }
}

// clusterACL: the API is authorized as a whole by op on kafka-cluster.
func clusterACL(op auth.Operation) apiOption {
	return func(d *apiDef) { d.clusterOp, d.hasClusterOp = op, true }
}

var registry = map[int16]apiDef{}

// register is called from each handler file's init.
func register(key kmsg.Key, min, max int16, h handlerFunc, opts ...apiOption) {
	if _, dup := registry[int16(key)]; dup {
		panic("api: " + key.Name() + " registered twice")
	}
	if max > key.Request().MaxVersion() {
		panic("api: " + key.Name() + " registered above what kmsg can decode")
	}
	d := apiDef{min: min, max: max, handle: h}
	for _, o := range opts {
		o(&d)
	}
	registry[int16(key)] = d
}
