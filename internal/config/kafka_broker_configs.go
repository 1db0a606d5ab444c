package config

import (
	"fmt"
	"strings"
)

// kafkaOnlyDefs are the Kafka 4.0 broker configs that kbroker accepts,
// validates and describes as Kafka defines them (type, default, range,
// dynamic update mode) but does not need: operators' server.properties and
// scripts set them, and refusing them would break those. Each one's
// documentation says why kbroker has no use for it; the dynamic ones are
// applied by ApplyNotNeeded, which deliberately does nothing.
// testdata/kafka-4.0-broker-configs.txt lists Kafka's key set.
func kafkaOnlyDefs() []*Def {
	return concat(
		// Kafka keys kbroker reads as Kafka does: the controller's elections and
		// shutdown, the replica fetchers and ISR, the KIP-848 group coordinator,
		// the replicated internal topics.
		[]*Def{
			def("auto.leader.rebalance.enable", TypeBoolean, "true", ReadOnly, nil, "Move leadership back to preferred replicas periodically."),
			def("leader.imbalance.check.interval.seconds", TypeLong, "300", ReadOnly, atLeast(1), "How often leader balance is checked."),
			def("controlled.shutdown.enable", TypeBoolean, "true", ReadOnly, nil, "Hand leadership over before a broker stops."),
			def("replica.fetch.min.bytes", TypeInt, "1", ReadOnly, nil, "Bytes a follower's fetch waits for."),
			def("replica.fetch.wait.max.ms", TypeInt, "500", ReadOnly, nil, "Longest wait of a follower's fetch."),
			def("replica.fetch.max.bytes", TypeInt, "1048576", ReadOnly, atLeast(0), "Bytes a follower asks for per partition."),
			def("replica.fetch.response.max.bytes", TypeInt, "10485760", ReadOnly, atLeast(0), "Bytes a follower asks for per fetch."),
			def("replica.fetch.backoff.ms", TypeInt, "1000", ReadOnly, atLeast(0), "Pause after a fetch partition error."),
			def("replica.high.watermark.checkpoint.interval.ms", TypeLong, "5000", ReadOnly, nil, "How often high watermarks are saved."),
			def("replica.lag.time.max.ms", TypeLong, "30000", ReadOnly, nil, "How long a follower may lag before it leaves the ISR."),
			def("replication.quota.window.num", TypeInt, "11", ReadOnly, atLeast(1), "Samples kept for replication quotas."),
			def("replication.quota.window.size.seconds", TypeInt, "1", ReadOnly, atLeast(1), "Length of one sample of replication quotas."),
			replicationQuotaDef(def("leader.replication.throttled.rate", TypeLong, maxLong, ClusterWide, atLeast(0), "Bytes per second of leader-side replication of throttled replicas (a dynamic-only Kafka key).")),
			replicationQuotaDef(def("follower.replication.throttled.rate", TypeLong, maxLong, ClusterWide, atLeast(0), "Bytes per second of follower-side replication of throttled replicas (a dynamic-only Kafka key).")),
			def("group.coordinator.rebalance.protocols", TypeList, "classic,consumer", ReadOnly, subsetOf("consumer", "classic"), "Rebalance protocols served."),
			def("group.consumer.assignors", TypeList, "uniform,range", ReadOnly, nil, "Server-side assignors, the first the default (KIP-848)."),
			def("group.consumer.heartbeat.interval.ms", TypeInt, "5000", ReadOnly, atLeast(1), "Heartbeat interval given to consumer-protocol members."),
			def("group.consumer.max.heartbeat.interval.ms", TypeInt, "15000", ReadOnly, atLeast(1), "Largest heartbeat interval of consumer-protocol members."),
			def("group.consumer.min.heartbeat.interval.ms", TypeInt, "5000", ReadOnly, atLeast(1), "Smallest heartbeat interval of consumer-protocol members."),
			def("group.consumer.session.timeout.ms", TypeInt, "45000", ReadOnly, atLeast(1), "Session timeout of consumer-protocol members."),
			def("group.consumer.max.session.timeout.ms", TypeInt, "60000", ReadOnly, atLeast(1), "Largest session timeout of consumer-protocol members."),
			def("group.consumer.min.session.timeout.ms", TypeInt, "45000", ReadOnly, atLeast(1), "Smallest session timeout of consumer-protocol members."),
			def("group.consumer.max.size", TypeInt, "2147483647", ReadOnly, atLeast(1), "Most members of one consumer-protocol group."),
			def("group.consumer.migration.policy", TypeString, "bidirectional", ReadOnly, oneOfFold("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL"), "Which conversions between classic and consumer groups are allowed."),
			def("offsets.commit.timeout.ms", TypeInt, "5000", ReadOnly, atLeast(1), "How long an offset commit waits for the offsets topic's replicas."),
			def("offsets.topic.replication.factor", TypeShort, "3", ReadOnly, atLeast(1), "Replication factor of the offsets topic."),
			def("transaction.state.log.min.isr", TypeInt, "2", ReadOnly, atLeast(1), "min.insync.replicas of the transaction topic."),
			def("transaction.state.log.replication.factor", TypeShort, "3", ReadOnly, atLeast(1), "Replication factor of the transaction topic."),
			def("request.timeout.ms", TypeInt, "30000", ReadOnly, nil, "Timeout of the broker's own outbound requests."),
			// The inter-broker clients' (broker/interbroker.go), read at startup:
			// a dynamic change of the per-broker ones applies at the next restart.
			def("security.inter.broker.protocol", TypeString, "PLAINTEXT", ReadOnly, oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "Security protocol between brokers when inter.broker.listener.name is not set: the inter-broker listener is the one of that name."),
			interBrokerClientDef(def("sasl.mechanism.inter.broker.protocol", TypeString, "GSSAPI", PerBroker, nil, "SASL mechanism brokers authenticate to each other with, with the username and password of the inter-broker listener's JAAS line for it. kbroker implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, not Kafka's default GSSAPI: a SASL inter-broker listener needs one of them set here and enabled on it.")),
			interBrokerClientDef(def("ssl.endpoint.identification.algorithm", TypeString, "https", PerBroker, nil, "Host name verification of the other broker's certificate on inter-broker connections: https checks the certificate names the address dialed; empty checks the chain only.")),
		},
		notNeeded("its goroutines take the place of Kafka's JVM thread pools",
			def("num.io.threads", TypeInt, "8", ClusterWide, atLeast(1), "Threads that handle requests."),
			def("num.network.threads", TypeInt, "3", ClusterWide, atLeast(1), "Threads per listener that read requests and write responses."),
			def("background.threads", TypeInt, "10", ClusterWide, atLeast(1), "Threads for background tasks."),
			def("num.recovery.threads.per.data.dir", TypeInt, "2", ClusterWide, atLeast(1), "Threads per log directory that recover logs at startup and flush them at shutdown (Kafka 4.0 default 2, KIP-1030)."),
			def("log.cleaner.threads", TypeInt, "1", ClusterWide, atLeast(0), "Threads that compact logs."),
			def("queued.max.requests", TypeInt, "500", ReadOnly, atLeast(1), "Requests queued for the request threads before network threads stop reading."),
		),
		notNeeded("its log cleaner has no dedupe buffer, I/O budget or back-off to tune",
			def("log.cleaner.enable", TypeBoolean, "true", ReadOnly, nil, "Run the log cleaner, which compacts topics with cleanup.policy=compact."),
			def("log.cleaner.backoff.ms", TypeLong, "15000", ClusterWide, atLeast(0), "Pause of the cleaner when no log needs cleaning."),
			def("log.cleaner.dedupe.buffer.size", TypeLong, "134217728", ClusterWide, nil, "Memory for the key map of compaction, over all cleaner threads."),
			def("log.cleaner.io.buffer.load.factor", TypeDouble, "0.9", ClusterWide, nil, "How full the cleaner's dedupe buffer may get."),
			def("log.cleaner.io.buffer.size", TypeInt, "524288", ClusterWide, atLeast(0), "Memory for the cleaner's read and write buffers, over all cleaner threads."),
			def("log.cleaner.io.max.bytes.per.second", TypeDouble, "1.7976931348623157E308", ClusterWide, nil, "Throttle on the cleaner's read plus write rate."),
		),
		notNeeded("its storage keeps recovery points and log start offsets its own way",
			def("log.flush.offset.checkpoint.interval.ms", TypeInt, "60000", ReadOnly, atLeast(0), "How often the recovery point of each log is saved."),
			def("log.flush.start.offset.checkpoint.interval.ms", TypeInt, "60000", ReadOnly, atLeast(0), "How often the log start offset of each log is saved."),
			def("log.dir.failure.timeout.ms", TypeLong, "30000", ReadOnly, atLeast(1), "How long a broker may fail to report a failed log directory to the controller before it shuts down."),
			def("num.replica.alter.log.dirs.threads", TypeInt, none, ReadOnly, nil, "Threads that move replicas between log directories (default: one per directory)."),
		),
		notNeeded("it has no KRaft controller quorum; its metadata is a local bbolt file or etcd (metadata.etcd.*)",
			def("process.roles", TypeList, none, ReadOnly, subsetOf("broker", "controller"), "Roles of a KRaft process: broker, controller or both."),
			def("controller.listener.names", TypeString, none, ReadOnly, nil, "Listeners the controllers use."),
			def("controller.quorum.bootstrap.servers", TypeList, "", ReadOnly, nil, "host:port endpoints to find the controller quorum."),
			def("controller.quorum.voters", TypeList, "", ReadOnly, nil, "Static controller quorum as id@host:port entries."),
			def("controller.quorum.request.timeout.ms", TypeInt, "2000", ReadOnly, nil, "Timeout of a request to the controller quorum."),
			def("controller.quorum.retry.backoff.ms", TypeInt, "20", ReadOnly, nil, "Initial wait before a failed quorum request is retried."),
			def("controller.socket.timeout.ms", TypeInt, "30000", ReadOnly, nil, "Socket timeout of controller-to-broker channels."),
			def("sasl.mechanism.controller.protocol", TypeString, "GSSAPI", ReadOnly, nil, "SASL mechanism for talking to controllers."),
			def("early.start.listeners", TypeString, none, ReadOnly, nil, "Listeners started before the authorizer is ready."),
			def("broker.heartbeat.interval.ms", TypeInt, "2000", ReadOnly, nil, "Time between a broker's heartbeats to the controller."),
			def("broker.session.timeout.ms", TypeInt, "9000", ReadOnly, nil, "How long a broker stays registered without heartbeats."),
			def("initial.broker.registration.timeout.ms", TypeInt, "60000", ReadOnly, nil, "How long a starting broker waits to register with the controller."),
			def("metadata.log.dir", TypeString, none, ReadOnly, nil, "Directory of the metadata log (default: the first log directory)."),
			def("metadata.log.max.record.bytes.between.snapshots", TypeLong, "20971520", ReadOnly, atLeast(1), "Metadata log bytes after which a new snapshot is written."),
			def("metadata.log.max.snapshot.interval.ms", TypeLong, "3600000", ReadOnly, atLeast(0), "Longest time before committed metadata is snapshotted (0: no time-based snapshots)."),
			def("metadata.log.segment.bytes", TypeInt, "1073741824", ReadOnly, atLeast(12), "Segment size of the metadata log."),
			def("metadata.log.segment.ms", TypeLong, "604800000", ReadOnly, nil, "Segment age at which the metadata log rolls."),
			def("metadata.max.retention.bytes", TypeLong, "104857600", ReadOnly, nil, "Size of metadata log plus snapshots above which old ones are deleted."),
			def("metadata.max.retention.ms", TypeLong, "604800000", ReadOnly, nil, "Age after which old metadata log files and snapshots are deleted."),
			def("controller.quota.window.num", TypeInt, "11", ReadOnly, atLeast(1), "Samples kept for controller mutation quotas."),
			def("controller.quota.window.size.seconds", TypeInt, "1", ReadOnly, atLeast(1), "Length of one sample of controller mutation quotas."),
			def("alter.config.policy.class.name", TypeClass, none, ReadOnly, nil, "AlterConfigPolicy class run by the controller."),
			def("create.topic.policy.class.name", TypeClass, none, ReadOnly, nil, "CreateTopicPolicy class run by the controller."),
		),
		notNeeded("its replica fetchers are one franz-go client per leader broker, over the inter-broker listener",
			def("num.replica.fetchers", TypeInt, "1", ClusterWide, nil, "Fetcher threads per source broker that replicate partitions."),
			def("replica.socket.receive.buffer.bytes", TypeInt, "65536", ReadOnly, nil, "Receive buffer of replication connections."),
			def("replica.socket.timeout.ms", TypeInt, "30000", ReadOnly, nil, "Socket timeout of replication requests."),
			def("replica.selector.class", TypeString, none, ReadOnly, nil, "ReplicaSelector class choosing the preferred read replica (KIP-392)."),
			def("alter.log.dirs.replication.quota.window.num", TypeInt, "11", ReadOnly, atLeast(1), "Samples kept for the quota on moving replicas between directories."),
			def("alter.log.dirs.replication.quota.window.size.seconds", TypeInt, "1", ReadOnly, atLeast(1), "Length of one sample of that quota."),
			def("replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, maxLong, ClusterWide, atLeast(0), "Bytes per second of moving replicas between directories (a dynamic-only Kafka key)."),
		),
		notNeeded("its group coordinator runs one event loop per offsets partition and writes each request's records at once",
			def("group.coordinator.threads", TypeInt, "4", ReadOnly, atLeast(1), "Threads of the group coordinator."),
			def("group.coordinator.append.linger.ms", TypeInt, "5", ReadOnly, atLeast(0), "How long the coordinator batches writes."),
			def("offsets.load.buffer.size", TypeInt, "5242880", ReadOnly, atLeast(1), "Read size when loading the offsets topic."),
			def("offsets.topic.compression.codec", TypeInt, "0", ReadOnly, nil, "Compression codec of the offsets topic."),
		),
		notNeeded("it does not serve share groups (KIP-932)",
			def("group.share.delivery.count.limit", TypeInt, "5", ReadOnly, between(2, 10), "Delivery attempts of a record to a share group."),
			def("group.share.heartbeat.interval.ms", TypeInt, "5000", ReadOnly, atLeast(1), "Heartbeat interval of share-group members."),
			def("group.share.max.groups", TypeShort, "10", ReadOnly, between(1, 100), "Most share groups."),
			def("group.share.max.heartbeat.interval.ms", TypeInt, "15000", ReadOnly, atLeast(1), "Largest heartbeat interval of share-group members."),
			def("group.share.min.heartbeat.interval.ms", TypeInt, "5000", ReadOnly, atLeast(1), "Smallest heartbeat interval of share-group members."),
			def("group.share.max.record.lock.duration.ms", TypeInt, "60000", ReadOnly, between(30000, 3600000), "Longest record acquisition lock."),
			def("group.share.min.record.lock.duration.ms", TypeInt, "15000", ReadOnly, between(1000, 30000), "Shortest record acquisition lock."),
			def("group.share.record.lock.duration.ms", TypeInt, "30000", ReadOnly, between(1000, 3600000), "Record acquisition lock duration."),
			def("group.share.max.session.timeout.ms", TypeInt, "60000", ReadOnly, atLeast(1), "Largest session timeout of share-group members."),
			def("group.share.min.session.timeout.ms", TypeInt, "45000", ReadOnly, atLeast(1), "Smallest session timeout of share-group members."),
			def("group.share.session.timeout.ms", TypeInt, "45000", ReadOnly, atLeast(1), "Session timeout of share-group members."),
			def("group.share.max.size", TypeInt, "200", ReadOnly, between(1, 1000), "Most members of one share group."),
			def("group.share.partition.max.record.locks", TypeInt, "200", ReadOnly, between(100, 10000), "Record locks per share-partition."),
			def("share.coordinator.append.linger.ms", TypeInt, "10", ReadOnly, atLeast(0), "How long the share coordinator batches writes."),
			def("share.coordinator.load.buffer.size", TypeInt, "5242880", ReadOnly, atLeast(1), "Read size when loading the share-group state topic."),
			def("share.coordinator.snapshot.update.records.per.snapshot", TypeInt, "500", ReadOnly, atLeast(0), "Update records between two snapshot records."),
			def("share.coordinator.state.topic.compression.codec", TypeInt, "0", ReadOnly, nil, "Compression codec of the share-group state topic."),
			def("share.coordinator.state.topic.min.isr", TypeShort, "2", ReadOnly, atLeast(1), "min.insync.replicas of the share-group state topic."),
			def("share.coordinator.state.topic.num.partitions", TypeInt, "50", ReadOnly, atLeast(1), "Partitions of the share-group state topic."),
			def("share.coordinator.state.topic.replication.factor", TypeShort, "3", ReadOnly, atLeast(1), "Replication factor of the share-group state topic."),
			def("share.coordinator.state.topic.segment.bytes", TypeInt, "104857600", ReadOnly, atLeast(1), "Segment size of the share-group state topic."),
			def("share.coordinator.threads", TypeInt, "1", ReadOnly, atLeast(1), "Threads of the share coordinator."),
			def("share.coordinator.write.timeout.ms", TypeInt, "5000", ReadOnly, atLeast(1), "How long a share-state write waits for replicas."),
			def("share.fetch.purgatory.purge.interval.requests", TypeInt, "1000", ReadOnly, nil, "Purge interval of the share fetch purgatory, in requests."),
		),
		transactionDefs(),
		notNeeded("its transaction coordinator loads __transaction_state with the log's own reads",
			def("transaction.state.log.load.buffer.size", TypeInt, "5242880", ReadOnly, atLeast(1), "Read size when loading the transaction topic."),
		),
		notNeeded("Produce always checks with the transaction coordinator that a transactional batch's partition is in its transaction (KIP-890 part 1), and the coordinator answers AddPartitionsToTxn at once, with nothing to retry",
			def("transaction.partition.verification.enable", TypeBoolean, "true", ClusterWide, nil, "Check that a partition was added to the transaction before transactional writes to it (KIP-890)."),
			def("add.partitions.to.txn.retry.backoff.max.ms", TypeInt, "100", ReadOnly, atLeast(0), "Longest server-side wait for adding partitions to a transaction."),
			def("add.partitions.to.txn.retry.backoff.ms", TypeInt, "20", ReadOnly, atLeast(1), "Server-side retry back-off for adding partitions to a transaction."),
		),
		notNeeded("it has no tiered storage",
			def("remote.log.storage.system.enable", TypeBoolean, "false", ReadOnly, nil, "Start the tiered storage services."),
			def("remote.fetch.max.wait.ms", TypeInt, "500", ClusterWide, atLeast(1), "Longest wait of a fetch from remote storage."),
			def("remote.list.offsets.request.timeout.ms", TypeLong, "30000", ClusterWide, atLeast(1), "Timeout of a ListOffsets served from remote storage."),
			def("remote.log.index.file.cache.total.size.bytes", TypeLong, "1073741824", ClusterWide, atLeast(1), "Local space for index files fetched from remote storage."),
			def("remote.log.manager.copier.thread.pool.size", TypeInt, "10", ClusterWide, atLeast(1), "Threads copying segments to remote storage (Kafka 4.0 default 10, KIP-1030)."),
			def("remote.log.manager.expiration.thread.pool.size", TypeInt, "10", ClusterWide, atLeast(1), "Threads deleting expired remote segments (Kafka 4.0 default 10, KIP-1030)."),
			def("remote.log.manager.thread.pool.size", TypeInt, "2", ReadOnly, atLeast(1), "Threads of follower tasks reading the highest uploaded offset (Kafka 4.0 default 2, KIP-1030)."),
			def("remote.log.manager.copy.max.bytes.per.second", TypeLong, maxLong, ClusterWide, atLeast(1), "Bytes per second copied to remote storage."),
			def("remote.log.manager.copy.quota.window.num", TypeInt, "11", ReadOnly, atLeast(1), "Samples kept for the remote copy quota."),
			def("remote.log.manager.copy.quota.window.size.seconds", TypeInt, "1", ReadOnly, atLeast(1), "Length of one sample of the remote copy quota."),
			def("remote.log.manager.fetch.max.bytes.per.second", TypeLong, maxLong, ClusterWide, atLeast(1), "Bytes per second fetched from remote storage."),
			def("remote.log.manager.fetch.quota.window.num", TypeInt, "11", ReadOnly, atLeast(1), "Samples kept for the remote fetch quota."),
			def("remote.log.manager.fetch.quota.window.size.seconds", TypeInt, "1", ReadOnly, atLeast(1), "Length of one sample of the remote fetch quota."),
			def("remote.log.manager.task.interval.ms", TypeLong, "30000", ReadOnly, atLeast(1), "How often the remote log manager's tasks run."),
			def("remote.log.metadata.custom.metadata.max.bytes", TypeInt, "128", ReadOnly, atLeast(0), "Largest custom metadata accepted from a remote storage plug-in."),
			def("remote.log.metadata.manager.class.name", TypeString, "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", ReadOnly, nonEmpty, "RemoteLogMetadataManager class."),
			def("remote.log.metadata.manager.class.path", TypeString, none, ReadOnly, nil, "Class path of the RemoteLogMetadataManager."),
			def("remote.log.metadata.manager.impl.prefix", TypeString, "rlmm.config.", ReadOnly, nonEmpty, "Prefix of the properties passed to the RemoteLogMetadataManager."),
			def("remote.log.metadata.manager.listener.name", TypeString, none, ReadOnly, nonEmpty, "Local listener the RemoteLogMetadataManager connects to."),
			def("remote.log.reader.max.pending.tasks", TypeInt, "100", ReadOnly, atLeast(1), "Queue length of remote reads."),
			def("remote.log.reader.threads", TypeInt, "10", ClusterWide, atLeast(1), "Threads reading from remote storage."),
			def("remote.log.storage.manager.class.name", TypeString, none, ReadOnly, nonEmpty, "RemoteStorageManager class."),
			def("remote.log.storage.manager.class.path", TypeString, none, ReadOnly, nil, "Class path of the RemoteStorageManager."),
			def("remote.log.storage.manager.impl.prefix", TypeString, "rsm.config.", ReadOnly, nonEmpty, "Prefix of the properties passed to the RemoteStorageManager."),
		),
		notNeeded("it does not serve delegation tokens",
			def("delegation.token.secret.key", TypePassword, none, ReadOnly, nil, "Secret that signs delegation tokens; unset disables them."),
			def("delegation.token.expiry.time.ms", TypeLong, "86400000", ReadOnly, atLeast(1), "Validity of a token before it must be renewed."),
			def("delegation.token.max.lifetime.ms", TypeLong, "604800000", ReadOnly, atLeast(1), "Lifetime past which a token cannot be renewed."),
			def("delegation.token.expiry.check.interval.ms", TypeLong, "3600000", ReadOnly, atLeast(1), "How often expired tokens are removed."),
		),
		notNeeded("its delayed operations are completed or expired individually, with nothing to purge",
			def("fetch.purgatory.purge.interval.requests", TypeInt, "1000", ReadOnly, nil, "Purge interval of the fetch purgatory, in requests."),
			def("producer.purgatory.purge.interval.requests", TypeInt, "1000", ReadOnly, nil, "Purge interval of the produce purgatory, in requests."),
			def("delete.records.purgatory.purge.interval.requests", TypeInt, "1", ReadOnly, nil, "Purge interval of the DeleteRecords purgatory, in requests."),
		),
		notNeeded("its metrics are served in Prometheus form on metrics.listener",
			def("metric.reporters", TypeList, "org.apache.kafka.common.metrics.JmxReporter", ClusterWide, nil, "MetricsReporter classes."),
			def("metrics.num.samples", TypeInt, "2", ReadOnly, atLeast(1), "Samples kept per metric."),
			def("metrics.recording.level", TypeString, "INFO", ReadOnly, nil, "Highest metrics recording level: INFO, DEBUG or TRACE."),
			def("metrics.sample.window.ms", TypeLong, "30000", ReadOnly, atLeast(1), "Window of one metrics sample."),
			def("kafka.metrics.polling.interval.secs", TypeInt, "10", ReadOnly, atLeast(1), "Polling interval of Yammer metrics reporters."),
			def("kafka.metrics.reporters", TypeList, "", ReadOnly, nil, "Yammer metrics reporter classes."),
			def("telemetry.max.bytes", TypeInt, "1048576", ReadOnly, atLeast(1), "Largest client telemetry push (KIP-714)."),
		),
		notNeeded("it loads no Java plug-in classes",
			def("principal.builder.class", TypeClass, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", PerBroker, nil, "KafkaPrincipalBuilder class."),
			def("client.quota.callback.class", TypeClass, none, ReadOnly, nil, "ClientQuotaCallback class."),
			def("sasl.client.callback.handler.class", TypeClass, none, ReadOnly, nil, "SASL client callback handler class."),
			def("sasl.login.callback.handler.class", TypeClass, none, ReadOnly, nil, "SASL login callback handler class."),
			def("sasl.login.class", TypeClass, none, ReadOnly, nil, "SASL Login class."),
			def("sasl.server.callback.handler.class", TypeClass, none, ReadOnly, nil, "SASL server callback handler class."),
			def("security.providers", TypeString, none, ReadOnly, nil, "SecurityProviderCreator classes."),
			def("ssl.engine.factory.class", TypeClass, none, PerBroker, nil, "SslEngineFactory class."),
		),
		notNeeded("it implements neither GSSAPI (Kerberos) nor OAUTHBEARER",
			def("sasl.kerberos.kinit.cmd", TypeString, "/usr/bin/kinit", PerBroker, nil, "Path of kinit."),
			def("sasl.kerberos.min.time.before.relogin", TypeLong, "60000", PerBroker, nil, "Sleep of the login thread between refreshes."),
			def("sasl.kerberos.principal.to.local.rules", TypeList, "DEFAULT", PerBroker, nil, "Rules mapping Kerberos principals to short names."),
			def("sasl.kerberos.service.name", TypeString, none, PerBroker, nil, "Kerberos principal name of the broker."),
			def("sasl.kerberos.ticket.renew.jitter", TypeDouble, "0.05", PerBroker, nil, "Random jitter added to the ticket renewal time."),
			def("sasl.kerberos.ticket.renew.window.factor", TypeDouble, "0.8", PerBroker, nil, "Share of a ticket's lifetime after which it is renewed."),
			def("sasl.login.refresh.buffer.seconds", TypeShort, "300", PerBroker, nil, "Buffer before credential expiry kept when refreshing."),
			def("sasl.login.refresh.min.period.seconds", TypeShort, "60", PerBroker, nil, "Shortest wait before refreshing a credential."),
			def("sasl.login.refresh.window.factor", TypeDouble, "0.8", PerBroker, nil, "Share of a credential's lifetime after which it is refreshed."),
			def("sasl.login.refresh.window.jitter", TypeDouble, "0.05", PerBroker, nil, "Random jitter added to the refresh time."),
			def("sasl.login.connect.timeout.ms", TypeInt, none, ReadOnly, nil, "Connect timeout to the identity provider."),
			def("sasl.login.read.timeout.ms", TypeInt, none, ReadOnly, nil, "Read timeout from the identity provider."),
			def("sasl.login.retry.backoff.max.ms", TypeLong, "10000", ReadOnly, nil, "Longest wait between login attempts."),
			def("sasl.login.retry.backoff.ms", TypeLong, "100", ReadOnly, nil, "First wait between login attempts."),
			def("sasl.oauthbearer.clock.skew.seconds", TypeInt, "30", ReadOnly, nil, "Clock difference allowed with the identity provider."),
			def("sasl.oauthbearer.expected.audience", TypeList, none, ReadOnly, nil, "Audiences a JWT must name."),
			def("sasl.oauthbearer.expected.issuer", TypeString, none, ReadOnly, nil, "Issuer a JWT must name."),
			def("sasl.oauthbearer.jwks.endpoint.refresh.ms", TypeLong, "3600000", ReadOnly, nil, "How often the JWKS cache is refreshed."),
			def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", TypeLong, "10000", ReadOnly, nil, "Longest wait between JWKS fetch attempts."),
			def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", TypeLong, "100", ReadOnly, nil, "First wait between JWKS fetch attempts."),
			def("sasl.oauthbearer.jwks.endpoint.url", TypeString, none, ReadOnly, nil, "Where the identity provider's JWKS is read."),
			def("sasl.oauthbearer.scope.claim.name", TypeString, "scope", ReadOnly, nil, "JWT claim holding the scope."),
			def("sasl.oauthbearer.sub.claim.name", TypeString, "sub", ReadOnly, nil, "JWT claim holding the subject."),
			def("sasl.oauthbearer.token.endpoint.url", TypeString, none, ReadOnly, nil, "Token endpoint (or token file) of the identity provider."),
		),
		notNeeded("its TLS is Go's crypto/tls, which offers its own secure protocol versions and cipher suites and has no JVM provider, algorithm or random source to choose",
			def("ssl.cipher.suites", TypeList, "", PerBroker, nil, "Cipher suites offered."),
			def("ssl.enabled.protocols", TypeList, "TLSv1.2,TLSv1.3", PerBroker, nil, "TLS versions enabled."),
			def("ssl.protocol", TypeString, "TLSv1.3", PerBroker, nil, "Protocol of the SSLContext."),
			def("ssl.provider", TypeString, none, PerBroker, nil, "Security provider for TLS."),
			def("ssl.keymanager.algorithm", TypeString, "SunX509", PerBroker, nil, "Key manager factory algorithm."),
			def("ssl.trustmanager.algorithm", TypeString, "PKIX", PerBroker, nil, "Trust manager factory algorithm."),
			def("ssl.secure.random.implementation", TypeString, none, PerBroker, nil, "SecureRandom implementation."),
			def("ssl.allow.dn.changes", TypeBoolean, "false", ReadOnly, nil, "Allow a dynamically reloaded certificate to change its distinguished name."),
			def("ssl.allow.san.changes", TypeBoolean, "false", ReadOnly, nil, "Allow a dynamically reloaded certificate to change its subject alternative names."),
		),
		notNeeded("it leaves socket buffers, the accept backlog and outbound connection timeouts to the operating system and Go's defaults",
			def("socket.receive.buffer.bytes", TypeInt, "102400", ReadOnly, nil, "SO_RCVBUF of accepted sockets (-1: the OS default)."),
			def("socket.send.buffer.bytes", TypeInt, "102400", ReadOnly, nil, "SO_SNDBUF of accepted sockets (-1: the OS default)."),
			def("socket.listen.backlog.size", TypeInt, "50", ReadOnly, atLeast(1), "Pending connections the listen socket queues."),
			def("socket.connection.setup.timeout.ms", TypeLong, "10000", ReadOnly, nil, "First timeout of an outbound connection attempt."),
			def("socket.connection.setup.timeout.max.ms", TypeLong, "30000", ReadOnly, nil, "Longest timeout of an outbound connection attempt."),
		),
		notNeeded("it has no setting of its own for this; the behaviour it governs is fixed in kbroker",
			def("delete.topic.enable", TypeBoolean, "true", ReadOnly, nil, "Allow DeleteTopics (kbroker always does)."),
			def("max.incremental.fetch.session.cache.slots", TypeInt, "1000", ReadOnly, atLeast(0), "Incremental fetch sessions kept (KIP-227)."),
			def("max.request.partition.size.limit", TypeInt, "2000", ReadOnly, atLeast(1), "Most partitions served in one request."),
			def("fetch.max.bytes", TypeInt, "57671680", ReadOnly, atLeast(1024), "Largest fetch response."),
			def("connection.failed.authentication.delay.ms", TypeInt, "100", ReadOnly, atLeast(0), "Delay before a connection that failed authentication is closed."),
			def("sasl.server.max.receive.size", TypeInt, "524288", ReadOnly, nil, "Largest frame accepted before and during SASL authentication."),
		),
	)
}

// none as a def default marks a key with no default (Kafka's null).
const none = "\x00none"

func def(name string, t Type, dflt string, mode Mode, check func(string) error, doc string) *Def {
	d := &Def{Name: name, Type: t, Default: dflt, Mode: mode, Check: check, Doc: doc}
	if dflt == none {
		d.Default, d.NoDefault = "", true
	}
	return d
}

// interBrokerClientDef marks a key of the inter-broker clients. They read
// it at startup; its applier is the listeners', which reads the same ssl.*
// and sasl.* keys for the server side.
func interBrokerClientDef(d *Def) *Def {
	d.AppliedBy = ApplyListenerSecurity
	d.Doc += " Read by the inter-broker clients at startup: a dynamic change applies to them at the next restart."
	return d
}

// replicationQuotaDef marks a broker key of the replication throttles
// (internal/replica throttle.go), which follow its dynamic changes.
func replicationQuotaDef(d *Def) *Def {
	d.AppliedBy = ApplyReplicationQuotas
	return d
}

// notNeeded says in each def's documentation why kbroker does not need it
// and gives the dynamic ones the no-op applier.
func notNeeded(reason string, defs ...*Def) []*Def {
	for _, d := range defs {
		d.Doc += " Accepted for compatibility with Kafka; kbroker does not need it: " + reason + "."
		if d.Mode != ReadOnly {
			d.AppliedBy = ApplyNotNeeded
		}
	}
	return defs
}

func concat(groups ...[]*Def) []*Def {
	var out []*Def
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// oneOfFold is oneOf ignoring case (Kafka's CaseInsensitiveValidString).
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.EqualFold(strings.TrimSpace(v), a) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of (case insensitive): %s", strings.Join(allowed, ", "))
	}
}

// nonEmpty is Kafka's NonEmptyString validator.
func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errString("String must be non-empty")
	}
	return nil
}

// transactionDefs are the transaction coordinator's settings, read at
// start-up by internal/txn (txn.ConfigFrom), with Kafka's names, defaults
// and ranges.
func transactionDefs() []*Def {
	return []*Def{
		def("transaction.state.log.num.partitions", TypeInt, "50", ReadOnly, atLeast(1), "Partitions of __transaction_state, created on the first FindCoordinator for a transactional id; an id's coordinator is the leader of its partition (hash of the id), so changing this after transactional ids exist moves them and strands their state."),
		def("transaction.state.log.segment.bytes", TypeInt, "104857600", ReadOnly, atLeast(1), "segment.bytes of __transaction_state: small segments keep compaction and coordinator loads quick."),
		def("transaction.max.timeout.ms", TypeInt, "900000", ReadOnly, atLeast(1), "Largest transaction timeout a producer may ask for in InitProducerId; a longer one is INVALID_TRANSACTION_TIMEOUT."),
		def("transactional.id.expiration.ms", TypeInt, "604800000", ReadOnly, atLeast(1), "How long a transactional id with no transaction open is kept after its last use; then its state is removed (a tombstone in __transaction_state) and the id starts afresh."),
		def("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, "10000", ReadOnly, atLeast(1), "How often the coordinator aborts transactions open longer than their timeout (bumping the producer's epoch, so the producer is fenced)."),
		def("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, "3600000", ReadOnly, atLeast(1), "How often the coordinator removes transactional ids idle longer than transactional.id.expiration.ms."),
	}
}
