package config

import "kbroker/internal/celpolicy"

// StoredPolicySource names the stored rule set in its compile errors.
const StoredPolicySource = "kbroker.policy.rules"

// Brokers is the catalog of the broker configs kbroker reads. Keys that
// supply a topic config's default (its synonyms) are derived from Topics
// unless listed here with their own default (the hours/minutes forms).
var Brokers = newCatalog(append([]*Def{
	{Name: "node.id", Type: TypeInt, Default: "1", Check: atLeast(0), Mode: ReadOnly,
		Doc: "This broker's id in the cluster."},
	{Name: "broker.id", Type: TypeInt, NoDefault: true, Check: atLeast(0), Mode: ReadOnly,
		Doc: "Older name of node.id; used when node.id is not set."},
	// Kafka lets listeners, advertised.listeners and the protocol map
	// change per broker at runtime (adding or removing a listener);
	// kbroker binds its listeners once, at startup.
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://127.0.0.1:9092", Mode: ReadOnly,
		Doc: "Comma-separated NAME://host:port addresses the broker listens on. An empty host listens on all interfaces. Read only in kbroker (Kafka can change it per broker)."},
	{Name: "advertised.listeners", Type: TypeString, NoDefault: true, Mode: ReadOnly,
		Doc: "Addresses given to clients in Metadata, by listener name; defaults to listeners. Read only in kbroker (Kafka can change it per broker)."},
	{Name: "listener.security.protocol.map", Type: TypeString, Mode: ReadOnly,
		Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		Doc:     "Security protocol of each listener name. Read only in kbroker (Kafka can change it per broker)."},
	{Name: "log.dirs", Type: TypeString, NoDefault: true, Mode: ReadOnly,
		Doc: "Comma-separated directories holding partition logs and the metadata store; defaults to log.dir."},
	{Name: "log.dir", Type: TypeString, Default: "./data", Mode: ReadOnly,
		Doc: "Directory for partition logs when log.dirs is not set."},
	{Name: "num.partitions", Type: TypeInt, Default: "1", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Partitions of a topic created without a count (CreateTopics with -1, or auto-creation)."},
	// An INT in Kafka; kbroker keeps it within a replication factor's
	// wire range (INT16).
	{Name: "default.replication.factor", Type: TypeInt, Default: "1", Check: between(1, 32767), Mode: ReadOnly,
		Doc: "Replication factor of topics created without one."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", Mode: ReadOnly,
		Doc: "Create a topic when a client asks Metadata for one that does not exist."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Largest request frame accepted; a larger size prefix closes the connection before anything is allocated."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", Mode: ReadOnly,
		Doc: "Retention in hours, used when log.retention.ms and log.retention.minutes are not set."},
	{Name: "log.retention.minutes", Type: TypeInt, NoDefault: true, Mode: ReadOnly,
		Doc: "Retention in minutes, used when log.retention.ms is not set."},
	{Name: "log.retention.ms", Type: TypeLong, NoDefault: true, Mode: ClusterWide, AppliedBy: ApplyLogs,
		Doc: "Retention in milliseconds; -1 keeps records forever."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Segment age in hours before rolling, used when log.roll.ms is not set."},
	// The checks of the broker keys that supply a topic config's default
	// are the topic config's own (segment.ms ≥ 1, …): Kafka would refuse to
	// build the topics' LogConfig from anything else.
	{Name: "log.roll.ms", Type: TypeLong, NoDefault: true, Check: atLeast(1), Mode: ClusterWide, AppliedBy: ApplyLogs,
		Doc: "Segment age in milliseconds before rolling."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Roll jitter in hours, used when log.roll.jitter.ms is not set."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, NoDefault: true, Check: atLeast(0), Mode: ClusterWide, AppliedBy: ApplyLogs,
		Doc: "Roll jitter in milliseconds."},
	{Name: "log.flush.interval.ms", Type: TypeLong, NoDefault: true, Check: atLeast(0), Mode: ClusterWide, AppliedBy: ApplyLogs,
		Doc: "Force an fsync after this much time; unset leaves it to log.flush.scheduler.interval.ms."},
	// Kafka's log flusher checks every log this often; read only there too.
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxLong, Check: atLeast(0), Mode: ReadOnly,
		Doc: "How often logs are checked for a flush due by flush.ms; also flush.ms's default when log.flush.interval.ms is not set."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", Check: atLeast(1), Mode: ReadOnly,
		Doc: "How often retention is applied to every partition."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", Mode: ReadOnly,
		Doc: "Close connections idle for longer than this."},
	{Name: "queued.max.request.bytes", Type: TypeLong, Default: "-1", Mode: ReadOnly,
		Doc: "Bytes of requests read but not yet handled, over all connections, before the broker stops reading from every connection until some are handled (Kafka's memory pool); -1 or 0: no bound."},
	{Name: "metrics.listener", Type: TypeString, Default: "", Mode: ReadOnly,
		Doc: "host:port of the Prometheus /metrics endpoint (kbroker); empty turns it off."},
	{Name: "broker.rack", Type: TypeString, NoDefault: true, Mode: ReadOnly,
		Doc: "Rack of this broker, for rack-aware placement."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Partitions of __consumer_offsets, created on the first FindCoordinator for a group; a group's coordinator is the leader of its partition, so changing this after groups exist moves them (and strands their offsets)."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", Check: atLeast(1), Mode: ReadOnly,
		Doc: "segment.bytes of __consumer_offsets: small segments keep compaction and coordinator loads quick."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Longest metadata string an offset commit may carry; a longer one gets OFFSET_METADATA_TOO_LARGE for its partition."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Check: atLeast(1), Mode: ReadOnly,
		Doc: "How long a committed offset is kept once it may expire (KIP-211): for a group with no members, from the time it became empty; for a topic an active consumer group no longer subscribes to, from the commit."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", Check: atLeast(1), Mode: ReadOnly,
		Doc: "How often the group coordinator looks for expired offsets."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", Mode: ReadOnly,
		Doc: "Shortest session timeout a group member may ask for in JoinGroup (INVALID_SESSION_TIMEOUT below it)."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", Mode: ReadOnly,
		Doc: "Longest session timeout a group member may ask for in JoinGroup (INVALID_SESSION_TIMEOUT above it)."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", Check: atLeast(0), Mode: ReadOnly,
		Doc: "How long the first rebalance of an empty group waits for more members, re-armed while they keep joining (up to the rebalance timeout): fewer rebalances at start-up, at the cost of a later start."},
	{Name: "group.max.size", Type: TypeInt, Default: "2147483647", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Most members one group may have; a join beyond it gets GROUP_MAX_SIZE_REACHED."},
	{Name: "kbroker.policy.file", Type: TypeString, NoDefault: true, Mode: ReadOnly,
		Doc: "A YAML file of CEL policy rules run on config changes, topic creation, partition increases and client quota changes (kbroker); re-read when it changes, a broken edit keeping the rules in effect. When set, it takes precedence over the rule set stored in the metadata store."},
	// One blob in the metadata store, so a rule set reaches every broker
	// through the store's change notification; a set that does not
	// compile is refused before it is stored.
	{Name: "kbroker.policy.rules", Type: TypeString, NoDefault: true, Mode: ClusterWide, AppliedBy: ApplyPolicies,
		Check: func(v string) error {
			if _, err := celpolicy.Compile(StoredPolicySource, []byte(v)); err != nil {
				return err
			}
			return nil
		},
		Doc: "The cluster's policy rule set, in the YAML of kbroker.policy.file (kbroker); set it with kbroker policies --apply. A broker with kbroker.policy.file set ignores it."},
	{Name: "kbroker.metrics.group.lag.max.series", Type: TypeInt, Default: "10000", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Most kbroker_group_lag series (one per group, topic and partition with a committed offset) one /metrics scrape exports (kbroker); the rest are left out, counted by kbroker_group_lag_series_dropped, so that many groups cannot swell every scrape."},
	{Name: "client.quota.subquota.mode", Type: TypeString, Default: "independent", Check: oneOf("independent", "reserved"), Mode: ReadOnly,
		Doc: "How a (user, client-id) quota relates to the user's quota: independent (Apache Kafka: the pair's own quota) or reserved (kbroker's extension: carved out of the user's total, which the user's other clients share)."},
	{Name: "quota.user.producer.default", Type: TypeLong, Default: "0", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Produce bytes per second of each user without a quota of its own, below any dynamic <default> user entity (0: unlimited)."},
	{Name: "quota.user.consumer.default", Type: TypeLong, Default: "0", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Fetch bytes per second of each user without a quota of its own, below any dynamic <default> user entity (0: unlimited)."},
	{Name: "quota.producer.default", Type: TypeLong, Default: "0", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Produce bytes per second of each client-id, used only when the user default is unlimited (0: unlimited)."},
	{Name: "quota.consumer.default", Type: TypeLong, Default: "0", Check: atLeast(0), Mode: ReadOnly,
		Doc: "Fetch bytes per second of each client-id, used only when the user default is unlimited (0: unlimited)."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Length of the quota window: the burst a byte-rate quota allows."},
	{Name: "quota.window.num", Type: TypeInt, Default: "11", Check: atLeast(1), Mode: ReadOnly,
		Doc: "Windows of burst of the controller mutation quota (samples × window × rate)."},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Check: atLeast(1), Mode: ClusterWide, AppliedBy: ApplyLogs,
		Doc: "How long an idempotent producer's sequence state is kept after its last write."},
	{Name: "max.connections", Type: TypeInt, Default: "2147483647", Check: atLeast(0), Mode: ClusterWide, AppliedBy: ApplyConnectionLimits,
		Doc: "Most connections the broker holds open at once over all listeners but the inter-broker one; listener.name.<listener>.max.connections limits one listener (by default to this value). At the limit, accepting waits until a connection closes: clients queue rather than being refused."},
	{Name: "max.connections.per.ip", Type: TypeInt, Default: "2147483647", Check: atLeast(0), Mode: ClusterWide, AppliedBy: ApplyConnectionLimits,
		Doc: "Most connections from one IP address; one more is closed at once."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "", Check: checkIPOverrides, Mode: ClusterWide, AppliedBy: ApplyConnectionLimits,
		Doc: "Per-IP exceptions to max.connections.per.ip, as ip:count,ip:count."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: "2147483647", Check: atLeast(0), Mode: ClusterWide, AppliedBy: ApplyConnectionLimits,
		Doc: "New connections per second the broker accepts over all listeners but the inter-broker one (KIP-612); listener.name.<listener>.max.connection.creation.rate limits one listener (by default to this value). Over the rate, accepting waits: clients queue rather than being refused."},
	{Name: "inter.broker.listener.name", Type: TypeString, NoDefault: true, Mode: ReadOnly,
		Doc: "The listener brokers use among themselves, exempt from the broker-wide max.connections and max.connection.creation.rate when there is more than one listener. Unset: the listener named PLAINTEXT, as Kafka derives it from security.inter.broker.protocol."},
}, concat(topicSynonymDefs(), securityDefs(), clusterDefs(), storageBoundDefs(), kafkaOnlyDefs())...))

// topicSynonymDefs gives every broker synonym of a topic config that is not
// defined above its own definition: the topic config's type and default,
// changeable cluster-wide as Kafka allows.
func topicSynonymDefs() []*Def {
	explicit := map[string]bool{
		"log.retention.hours": true, "log.retention.minutes": true, "log.retention.ms": true,
		"log.roll.hours": true, "log.roll.ms": true, "log.roll.jitter.hours": true, "log.roll.jitter.ms": true,
		"log.flush.interval.ms": true, "log.flush.scheduler.interval.ms": true,
	}
	var defs []*Def
	seen := map[string]bool{}
	for _, t := range Topics.Defs() {
		for _, s := range t.Synonyms {
			if explicit[s.Name] || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			defs = append(defs, &Def{Name: s.Name, Type: t.Type, Default: t.Default, Check: t.Check,
				Mode: ClusterWide, AppliedBy: ApplyLogs, Doc: "Cluster default of the topic config " + t.Name + ". " + t.Doc})
		}
	}
	return defs
}
