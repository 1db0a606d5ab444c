// Package api holds the broker's request handlers, one file per Kafka API.
// Each file registers its handler with the versions it serves, so the
// ApiVersions answer is derived from the handlers and cannot disagree.
package api

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/group"
	"kbroker/internal/logging"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/partitions"
	"kbroker/internal/quota"
	"kbroker/internal/wire"
	"kbroker/policy"
)

// handlerFunc answers one request. Per-resource problems go in the response
// as error codes; a returned error closes the connection.
type handlerFunc func(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error)

type apiDef struct {
	min, max int16
	handle   handlerFunc
}

var registry = map[int16]apiDef{}

// register is called from each handler file's init.
func register(key kmsg.Key, min, max int16, h handlerFunc) {
	if _, dup := registry[int16(key)]; dup {
		panic("api: " + key.Name() + " registered twice")
	}
	if max > key.Request().MaxVersion() {
		panic("api: " + key.Name() + " registered above what kmsg can decode")
	}
	registry[int16(key)] = apiDef{min: min, max: max, handle: h}
}

// Deps are the services the handlers use.
type Deps struct {
	Broker    *config.Broker
	ClusterID string
	Store     *meta.Store
	Logs      *partitions.Partitions
	Metrics   *metrics.Broker
	Logger    *slog.Logger
	// Audit receives one line per applied admin change.
	Audit *slog.Logger
	// Loggers are the broker's named loggers (the BROKER_LOGGER resource).
	Loggers *logging.Loggers
	// Quotas measures and limits clients (and validates quota changes).
	Quotas *quota.Manager
	// Policies set by the embedding program; nil allows everything.
	AlterConfigPolicy policy.AlterConfig
	CreateTopicPolicy policy.CreateTopic
	// Authz is the ACL authorizer; nil when authorizer.class.name is empty
	// (everything allowed, ACL APIs answer SECURITY_DISABLED). authorize.go.
	Authz *Authorization
	// Passwords encrypts dynamic PASSWORD configs at rest
	// (password.encoder.secret); nil refuses to store them.
	Passwords *auth.PasswordEncoder
	// Cluster names the elected controller (internal/cluster); nil: this
	// broker. The live brokers are in the snapshot.
	Cluster Controller
	// CheckListenerConfigs vets a change to this broker's dynamic configs
	// (next, the whole resulting set; fresh, the keys the change sets, in
	// plaintext, the others as stored) against the listeners it would
	// rebuild: TLS key pairs, trust stores, JAAS lines. Nil: no check.
	CheckListenerConfigs func(next map[string]string, fresh func(key string) bool) error
	// ListenerConfigsAltered is told the keys of every alter of this
	// broker's dynamic configs once it is stored, unchanged values
	// included, so listeners re-read the files they name. Nil: no one.
	ListenerConfigsAltered func(keys []string)
	// Groups is the group coordinator (internal/group); nil answers the
	// group APIs COORDINATOR_NOT_AVAILABLE.
	Groups *group.Coordinator
}

// Controller reports the elected controller's id (-1 while unknown).
type Controller interface{ Controller() int32 }

// Server dispatches requests to the handlers. It implements wire.Handler.
type Server struct {
	Deps
	producerIDs producerIDs
	topicBase   atomic.Pointer[topicBaseCache]
	// quotaListings is the last DescribeClientQuotas listing built.
	quotaListings atomic.Pointer[quotaListing]
}

// New returns the API server over deps.
func New(deps Deps) *Server { return &Server{Deps: deps} }

// Supports reports the version range of key (wire.Versions).
func (s *Server) Supports(key int16) (min, max int16, ok bool) {
	d, ok := registry[key]
	return d.min, d.max, ok
}

// Handle runs the handler of req's API (admin ones after catching up with
// the other brokers' changes, catch_up.go) and charges its time to the
// connection's request quota.
func (s *Server) Handle(ctx context.Context, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	s.catchUp(ctx, r) // waiting for etcd is not broker time: not charged
	start := time.Now()
	resp, err := registry[r.Key].handle(ctx, s, c, r)
	if err == nil {
		s.chargeRequestTime(c, r, resp, time.Since(start))
	}
	return resp, err
}

// nodeID is this broker's id.
func (s *Server) nodeID() int32 { return s.Broker.NodeID }

// controllerID is the controller Metadata and DescribeCluster report.
func (s *Server) controllerID() int32 {
	if s.Cluster == nil {
		return s.nodeID()
	}
	return s.Cluster.Controller()
}
