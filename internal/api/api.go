// Package api holds the broker's request handlers, one file per Kafka API:
// kmsg in, authorization, a call to the service that owns the work
// (internal/controller, txn, quota, meta, partitions), errors out through
// one table (errors.go). Each file registers its handler with the versions
// it serves and its other attributes (registry.go), so the ApiVersions
// answer, the catch-up and the CLUSTER ACL checks are derived from the
// handlers and cannot disagree.
package api

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/controller"
	"kbroker/internal/dynconfig"
	"kbroker/internal/fetchsession"
	"kbroker/internal/group"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/quota"
	"kbroker/internal/replica"
	"kbroker/internal/scram"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
	"kbroker/policy"
)

// Deps are the services the handlers use.
type Deps struct {
	Broker    *config.Broker
	ClusterID string
	Store     *meta.Store
	Logs      *replica.Partitions
	// Configs is the dynamic configuration: effective values, and every
	// change of a topic's or broker's configs.
	Configs *dynconfig.Configs
	Metrics *metrics.Broker
	Logger  *slog.Logger
	// Audit receives one line per applied admin change.
	Audit *slog.Logger
	// Quotas measures and limits clients (and validates quota changes).
	Quotas *quota.Manager
	// CreateTopicPolicy is set by the embedding program; nil allows
	// everything. (The alter-config policy is the dynamic configuration's.)
	CreateTopicPolicy policy.CreateTopic
	// CreatePartitionsPolicy and ClientQuotaPolicy veto partition
	// increases and client quota changes; nil allows everything.
	CreatePartitionsPolicy policy.CreatePartitions
	ClientQuotaPolicy      policy.AlterClientQuotas
	// Authz is the ACL authorizer; nil when authorizer.class.name is empty
	// (everything allowed, ACL APIs answer SECURITY_DISABLED). authorize.go.
	Authz *Authorization
	// Cluster names the elected controller (internal/cluster); nil: this
	// broker. The live brokers are in the snapshot.
	Cluster Controller
	// Groups is the group coordinator (internal/group); nil answers the
	// group APIs COORDINATOR_NOT_AVAILABLE.
	Groups *group.Coordinator
	// Txns is the transaction coordinator (internal/txn); nil answers the
	// transactional APIs COORDINATOR_NOT_AVAILABLE.
	Txns *txn.Coordinator
	// ProducerIDs is the broker's one producer-id allocator, which the
	// transaction coordinator hands transactional producers their ids
	// from too (Kafka's ProducerIdManager serves both InitProducerId
	// paths); nil: the server makes one of its own.
	ProducerIDs *txn.ProducerIDs
}

// Controller reports the elected controller's id (-1 while unknown).
type Controller interface{ Controller() int32 }

// Server dispatches requests to the handlers. It implements wire.Handler.
type Server struct {
	Deps
	// controller validates, places and creates topics and partitions.
	controller *controller.Controller
	// producer appends produced batches and counts their bytes.
	producer *replica.Producer
	// scram validates, applies and describes SCRAM credentials.
	scram *scram.Service
	// fetchSessions are the incremental fetch sessions (KIP-227) of
	// fetch_session.go.
	fetchSessions *fetchsession.Cache
	// quotaListings is the last DescribeClientQuotas listing built.
	quotaListings atomic.Pointer[quotaListing]

	// VerifyTxnPartitions is KIP-890: called, when set, before the
	// transactional batches of a Produce are appended (and before a
	// TxnOffsetCommit writes its offsets), it asks the transaction
	// coordinator whether the partitions are in the producer's ongoing
	// transaction and refuses the writes of those that are not
	// (TRANSACTION_ABORTABLE, answered as INVALID_TXN_STATE to Produce
	// before v11); with add (part 2, TV2: Produce v12+, TxnOffsetCommit
	// v5+) it adds them instead. All the partitions of one request come in
	// one call (Kafka's AddPartitionsToTxnManager batches them), and the
	// answer has an error, or nil, per partition, in their order. Set by
	// the broker's wiring before it serves; nil writes without asking.
	VerifyTxnPartitions func(ctx context.Context, transactionalID string, producerID int64, epoch int16, partitions []txn.TopicPartition, add bool) []error
	// transactionVersion is the finalized transaction.version: 2 unless a
	// test lowers it to see TV1's refusals.
	transactionVersion int16
	// WriteTxnMarker writes one marker of WriteTxnMarkers. New sets it to
	// the partition leader's append (replica.Partitions.WriteTxnMarker); the
	// broker's wiring replaces it so that markers for `__consumer_offsets`
	// partitions go through the group coordinator, which must complete the
	// transaction's offsets.
	WriteTxnMarker func(ctx context.Context, topic string, partition int32, m replica.TxnMarker) error
}

// New returns the API server over deps.
func New(deps Deps) *Server {
	s := &Server{
		Deps:       deps,
		controller: controller.New(deps.Broker, deps.Store, deps.Configs, deps.CreateTopicPolicy, deps.Logger),
		scram:      scram.New(deps.Store, deps.Audit),
		producer:   replica.NewProducer(deps.Logs, deps.Metrics.BytesIn),

		fetchSessions:      newFetchSessions(deps.Broker, deps.Metrics),
		transactionVersion: finalizedTransactionVersion,
	}
	if s.ProducerIDs == nil {
		s.ProducerIDs = txn.NewProducerIDs(deps.Store)
	}
	s.WriteTxnMarker = s.writeTxnMarkerToLog
	return s
}

// writeTxnMarkerToLog is WriteTxnMarker's default: the partition leader
// appends the marker to its log, waiting for the in-sync replicas at most
// request.timeout.ms.
func (s *Server) writeTxnMarkerToLog(ctx context.Context, topic string, partition int32, m replica.TxnMarker) error {
	return s.Logs.WriteTxnMarker(ctx, s.Store.Snapshot(), topic, partition, m, s.requestTimeout())
}

// requestTimeout is the broker's request.timeout.ms.
func (s *Server) requestTimeout() time.Duration {
	var props config.Properties
	if s.Broker != nil {
		props = s.Broker.Props
	}
	n, _ := strconv.Atoi(config.BrokerValue("request.timeout.ms", config.Layers{Static: props}))
	return time.Duration(n) * time.Millisecond
}

// Supports reports the version range of key (wire.Versions).
func (s *Server) Supports(key int16) (min, max int16, ok bool) {
	d, ok := registry[key]
	return d.min, d.max, ok
}

// Handle runs the handler of req's API (admin ones after catching up with
// the other brokers' changes, catch_up.go), charges its time to the
// connection's request quota and counts the error codes of its response.
func (s *Server) Handle(ctx context.Context, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	d := registry[r.Key]
	s.catchUp(ctx, d, r) // waiting for etcd is not broker time: not charged
	start := time.Now()
	resp, err := d.handle(ctx, s, c, r)
	if err == nil {
		s.chargeRequestTime(c, r, resp, time.Since(start))
		if s.Metrics != nil {
			s.Metrics.CountErrors(r.Key, resp)
		}
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
