// Package broker is the embeddable kbroker: New builds a broker from
// server.properties keys, Start opens its store and logs and starts serving,
// Close drains it. Tests and Go programs run a real broker in-process with
// it, on 127.0.0.1:0, and talk to it with any Kafka client.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"kbroker/internal/api"
	"kbroker/internal/buildinfo"
	"kbroker/internal/config"
	"kbroker/internal/controller"
	"kbroker/internal/dynconfig"
	"kbroker/internal/group"
	"kbroker/internal/logging"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/quota"
	"kbroker/internal/replica"
	"kbroker/internal/storage"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
	"kbroker/policy"
)

// MetadataFile is the bbolt file, in the first log directory, that holds
// the metadata when no external store is configured.
const MetadataFile = "kbroker-metadata.db"

// Option changes how a broker is built.
type Option func(*Broker)

// WithLogger sends the broker's logs to l's handler, which keeps its own
// level filter; the broker's loggers start at DEBUG below it. The default
// discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(b *Broker) { b.logHandler, b.logLevel = l.Handler(), slog.LevelDebug }
}

// WithLogHandler sends logs to h with the root logger at level (changeable
// at runtime through the BROKER_LOGGER config resource).
func WithLogHandler(h slog.Handler, level slog.Level) Option {
	return func(b *Broker) { b.logHandler, b.logLevel = h, level }
}

// WithAlterConfigPolicy vetoes config changes (Kafka's
// alter.config.policy.class.name).
func WithAlterConfigPolicy(p policy.AlterConfig) Option {
	return func(b *Broker) { b.alterPolicy = p }
}

// WithCreateTopicPolicy vetoes topic creation (Kafka's
// create.topic.policy.class.name).
func WithCreateTopicPolicy(p policy.CreateTopic) Option {
	return func(b *Broker) { b.createPolicy = p }
}

// Broker is one running kbroker.
type Broker struct {
	cfg          *config.Broker
	logHandler   slog.Handler
	logLevel     slog.Level
	loggers      *logging.Loggers
	log          *slog.Logger
	metrics      *metrics.Broker
	alterPolicy  policy.AlterConfig
	createPolicy policy.CreateTopic
	// policies.go
	partitionsPolicy policy.CreatePartitions
	quotaPolicy      policy.AlterClientQuotas

	dirLocks *storage.DirLocks
	store    *meta.Store
	configs  *dynconfig.Configs
	member   membership
	groups   *group.Coordinator
	txns     *txn.Coordinator
	// markerSender carries transaction markers to partitions led by other
	// brokers.
	markerSender *markerSender
	// fetchers copy the partitions this broker follows (replication.go).
	fetchers  *replica.Fetchers
	elections *controller.Elections
	logs      *storage.Manager
	server    *wire.Server
	addrs     []net.Addr
	mAddr     net.Addr

	cancel context.CancelFunc
	done   chan struct{}

	// uncleanStart: the previous run over these log dirs did not shut
	// down cleanly (cluster.go).
	uncleanStart bool
}

// New validates props (server.properties keys) and returns a broker that is
// not yet serving.
func New(props config.Properties, opts ...Option) (*Broker, error) {
	cfg, err := config.NewBroker(props)
	if err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, logHandler: slog.DiscardHandler, logLevel: slog.LevelInfo, metrics: metrics.New()}
	for _, o := range opts {
		o(b)
	}
	b.loggers = logging.New(b.logHandler, b.logLevel)
	b.log = b.loggers.Logger("kbroker.broker")
	return b, nil
}

// Start opens the metadata store and the partition logs (recovering them
// after a crash), then listens on every listener.
func (b *Broker) Start() (err error) {
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	// Kafka warns of supplied configs it does not know; a typo here would
	// otherwise silently leave the setting at its default.
	for _, k := range b.cfg.Unknown {
		if near := config.ClosestBrokerKey(k); near != "" {
			b.log.Warn("unknown configuration key "+k+" kept as is; did you mean "+near+"?", "key", k, "did_you_mean", near)
		} else {
			b.log.Warn("unknown configuration key "+k+" kept as is", "key", k)
		}
	}
	// Locked first: the metadata file and the partition logs in them must
	// not be opened by a second broker.
	if b.dirLocks, err = storage.LockDirs(b.cfg.LogDirs); err != nil {
		return err
	}
	if err := b.takeCleanShutdown(); err != nil {
		return err
	}
	if b.store, b.member, err = b.openStore(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	clusterID, err := b.store.EnsureClusterID(ctx)
	if err != nil {
		return err
	}
	// Process-wide, as RLIMIT_NOFILE is: the last broker started in a
	// process sets them for all.
	storage.SetMaxOpenFiles(b.cfg.MaxOpenLogFiles())
	storage.SetIndexCacheBytes(b.cfg.IndexCacheBytes())
	if b.logs, err = storage.OpenManager(b.cfg.LogDirs, b.loggers.Logger("kbroker.storage")); err != nil {
		return err
	}
	b.logs.FlushCheckIntervalMs = replica.FlushCheckInterval(b.cfg.Props)
	passwords, err := b.passwordEncoder()
	if err != nil {
		return err
	}
	policies, err := b.startPolicies(ctx)
	if err != nil {
		return err
	}
	b.configs = dynconfig.New(dynconfig.Options{
		Broker: b.cfg, Store: b.store, Policy: policies, Passwords: passwords,
		Logger: b.log, Audit: b.loggers.Logger("kbroker.audit"), Loggers: b.loggers,
	})
	b.watchStoredPolicies(policies)
	parts := replica.New(b.cfg, b.store, b.configs, b.logs, b.loggers.Logger("kbroker.partitions"), b.metrics.ForgetTopic)
	quotas := b.startQuotas()
	if err := parts.OpenAll(b.store.Snapshot()); err != nil {
		return err
	}
	b.watchPartitionLogs()
	b.groups = b.startGroups(parts)
	interBroker, err := b.newInterBroker()
	if err != nil {
		return err
	}
	b.markerSender = &markerSender{interBroker: interBroker}
	// One producer-id allocator for both InitProducerId paths: each
	// allocator reserves blocks of its own in the store.
	producerIDs := txn.NewProducerIDs(b.store)
	b.txns = b.startTransactions(parts, b.groups, producerIDs)
	b.watchTransactions(b.txns)
	b.startReplication(parts)
	sec, err := b.startSecurity(ctx)
	if err != nil {
		return err
	}
	dynamic := &dynamicListeners{b: b, rates: quotas.NewAcceptRates()}
	handlers := api.New(api.Deps{
		Broker: b.cfg, ClusterID: clusterID, Store: b.store, Logs: parts, Configs: b.configs, Metrics: b.metrics,
		Logger: b.loggers.Logger("kbroker.api"), Audit: b.loggers.Logger("kbroker.audit"),
		CreateTopicPolicy: policies, CreatePartitionsPolicy: policies, ClientQuotaPolicy: policies, Quotas: quotas,
		Authz: sec.authz, Cluster: b.member, Groups: b.groups, Txns: b.txns, ProducerIDs: producerIDs,
	})
	// KIP-890 part 1: a transactional batch is appended only to a partition
	// its producer's ongoing transaction holds; markers sent here by a
	// coordinator settle offsets through the group coordinator.
	handlers.VerifyTxnPartitions = b.verifyTxnPartitions
	handlers.WriteTxnMarker = b.routeTxnMarker(parts)
	b.server = wire.NewServer(handlers, wire.Options{
		MaxRequestBytes: b.cfg.SocketRequestMaxBytes,
		IdleTimeout:     time.Duration(b.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		Metrics:         b.metrics,
		Logger:          b.loggers.Logger("kbroker.wire"),
		ConnectionRate:  quotas.RecordConnection,
		AcceptRate:      dynamic.rates,
		MaxReauth:       sec.maxReauth,

		QueuedMaxRequestBytes: b.cfg.QueuedMaxRequestBytes,
		RequestReadTimeout:    b.cfg.RequestReadTimeout(),
	})
	// The metrics listener is bound first: Prometheus can watch a start
	// that waits (log recovery, the controller acting on an unclean
	// shutdown), and a taken port fails the start before clients can
	// connect.
	if b.cfg.MetricsListener != "" {
		if b.mAddr, err = b.metrics.Serve(ctx, b.cfg.MetricsListener, b.log); err != nil {
			return fmt.Errorf("metrics.listener: %w", err)
		}
	}
	if b.addrs, err = b.server.Listen(sec.specs); err != nil {
		return err
	}
	dynamic.server = b.server
	dynamic.register()
	b.advertiseBoundPorts()
	// Registered only now that the advertised ports are the bound ones.
	if err := b.member.Join(ctx, b.registration()); err != nil {
		return err
	}
	b.server.Serve()
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		b.logs.RunRetention(ctx, time.Duration(b.cfg.RetentionCheckIntervalMs)*time.Millisecond)
	}()
	b.logStarted(clusterID)
	return nil
}

// logStarted is the startup line: what an operator checks first (which
// build, which addresses clients and Prometheus reach), then what recovery
// did if a crash left logs to recover.
func (b *Broker) logStarted(clusterID string) {
	var listeners, advertised []string
	for i, l := range b.cfg.Listeners {
		listeners = append(listeners, l.Name+"://"+b.addrs[i].String())
	}
	for _, l := range b.cfg.AdvertisedListeners {
		advertised = append(advertised, l.Name+"://"+l.Addr())
	}
	metricsEndpoint := "off (metrics.listener unset)"
	if b.mAddr != nil {
		metricsEndpoint = "http://" + b.mAddr.String() + "/metrics"
	}
	info := buildinfo.Get()
	b.log.Info("kbroker started", "version", info.Version, "revision", info.RevisionLabel(),
		"node.id", b.cfg.NodeID, "cluster.id", clusterID, "listeners", listeners,
		"advertised.listeners", advertised, "metrics", metricsEndpoint, "log.dirs", b.cfg.LogDirs)
	if r := b.logs.Recovered(); r.Partitions > 0 {
		b.log.Info("recovered partition logs after an unclean shutdown", "partitions", r.Partitions,
			"segments_scanned", r.SegmentsScanned, "bytes_truncated", r.BytesTruncated, "took", r.Took.Round(time.Millisecond))
	}
}

// watchPartitionLogs exports the size and offsets of every open partition
// log, read at scrape time.
func (b *Broker) watchPartitionLogs() {
	logs := b.logs
	b.metrics.WatchPartitions(func(yield func(metrics.PartitionLog)) {
		logs.EachLog(func(topic string, partition int32, l *storage.Log) {
			yield(metrics.PartitionLog{Topic: topic, Partition: partition,
				Size: l.Size(), StartOffset: l.LogStartOffset(), EndOffset: l.LogEndOffset(), LastStableOffset: l.LastStableOffset()})
		})
	})
}

// startQuotas builds the quota manager from the static quota settings and
// keeps its overrides in step with the metadata store.
func (b *Broker) startQuotas() *quota.Manager {
	static := config.Layers{Static: b.cfg.Props}
	num := func(name string) float64 { v, _ := strconv.ParseFloat(config.BrokerValue(name, static), 64); return v }
	opts := quota.Options{
		UserProducerDefault:   num("quota.user.producer.default"),
		UserConsumerDefault:   num("quota.user.consumer.default"),
		ClientProducerDefault: num("quota.producer.default"),
		ClientConsumerDefault: num("quota.consumer.default"),
		Window:                time.Duration(num("quota.window.size.seconds")) * time.Second,
		Samples:               int(num("quota.window.num")),
		Registerer:            b.metrics.Registry,
	}
	if config.BrokerValue("client.quota.subquota.mode", static) == "reserved" {
		opts.Mode = quota.Reserved
	}
	q := quota.New(opts)
	q.SetOverrides(quota.Overrides(b.store.Snapshot().QuotaOverrides()))
	b.store.OnChange(func(ev meta.Event) {
		switch {
		case ev.Full:
			q.SetOverrides(quota.Overrides(ev.Cur.QuotaOverrides()))
		case ev.ChangedQuotas():
			q.ApplyChanges(quota.Overrides(ev.Cur.QuotaOverrides()), ev.ChangedQuotaPaths())
		}
	})
	return q
}

// advertiseBoundPorts fills in the real port of listeners configured with
// port 0, so Metadata points clients at the port actually bound.
func (b *Broker) advertiseBoundPorts() {
	for i, l := range b.cfg.Listeners {
		if l.Port != 0 {
			continue
		}
		port := b.addrs[i].(*net.TCPAddr).Port
		for j, a := range b.cfg.AdvertisedListeners {
			if a.Name == l.Name && a.Port == 0 {
				b.cfg.AdvertisedListeners[j].Port = port
			}
		}
	}
}

// Addr is the host:port of the first listener, for clients to bootstrap.
func (b *Broker) Addr() string {
	if len(b.addrs) == 0 {
		return ""
	}
	return b.addrs[0].String()
}

// Addrs lists the bound address of every listener, in configuration order.
func (b *Broker) Addrs() []string {
	var out []string
	for _, a := range b.addrs {
		out = append(out, a.String())
	}
	return out
}

// MetricsAddr is the bound address of the Prometheus endpoint, or "".
func (b *Broker) MetricsAddr() string {
	if b.mAddr == nil {
		return ""
	}
	return b.mAddr.String()
}

// NodeID is the broker's id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// Config is the broker's static configuration.
func (b *Broker) Config() *config.Broker { return b.cfg }

// Close stops accepting, lets in-flight requests finish, and closes the logs
// and the store cleanly. It is safe to call more than once.
func (b *Broker) Close() error {
	var errs []error
	if b.server != nil {
		errs = append(errs, b.server.Close())
		b.server = nil
	}
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
	}
	if b.done != nil {
		<-b.done
		b.done = nil
	}
	if b.txns != nil {
		b.txns.Close()
		b.txns = nil
	}
	b.stopReplication()
	if b.markerSender != nil {
		b.markerSender.close()
	}
	if b.groups != nil {
		b.groups.Close()
		b.groups = nil
	}
	settled := b.uncleanShutdownSettled()
	if b.member != nil {
		errs = append(errs, b.member.Close())
		b.member = nil
	}
	if b.logs != nil {
		errs = append(errs, b.logs.Close())
		b.logs = nil
	}
	if b.store != nil {
		errs = append(errs, b.store.Close())
		b.store = nil
	}
	if b.dirLocks != nil {
		if errors.Join(errs...) == nil && settled {
			errs = append(errs, storage.MarkBrokerCleanShutdown(b.cfg.LogDirs[0]))
		}
		errs = append(errs, b.dirLocks.Unlock())
		b.dirLocks = nil
		if err := errors.Join(errs...); err != nil {
			b.log.Error("kbroker stopped", "err", err)
		} else {
			b.log.Info("kbroker stopped")
		}
	}
	return errors.Join(errs...)
}

// Logger is the broker's own logger.
func (b *Broker) Logger() *slog.Logger { return b.log }
