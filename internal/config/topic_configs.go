package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Topics is the catalog of every topic-level config Apache Kafka 4.x
// defines, with its broker synonyms in precedence order (the first synonym
// is the dynamically updatable one). Documentation strings are kbroker's own.
// Every topic config is applied by the partition logs' applier but the
// throttled replica lists (appliedBy).
var Topics = newCatalog(appliedBy(ApplyLogs, []*Def{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", Check: subsetOf("compact", "delete"),
		Doc:      "What happens to old segments: \"delete\" removes them after retention, \"compact\" keeps the latest record per key. Both may be given.",
		Synonyms: []Synonym{{Name: "log.cleanup.policy"}}},
	{Name: "compression.type", Type: TypeString, Default: "producer", Check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Doc:      "Compression of stored batches. \"producer\" keeps what the producer sent.",
		Synonyms: []Synonym{{Name: "compression.type"}}},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Check: gzipLevel,
		Doc:      "Level used when the broker compresses with gzip (-1 is the codec's default).",
		Synonyms: []Synonym{{Name: "compression.gzip.level"}}},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Check: between(1, 17),
		Doc:      "Level used when the broker compresses with lz4.",
		Synonyms: []Synonym{{Name: "compression.lz4.level"}}},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Check: between(-131072, 22),
		Doc:      "Level used when the broker compresses with zstd.",
		Synonyms: []Synonym{{Name: "compression.zstd.level"}}},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", Check: atLeast(0),
		Doc:      "How long tombstones are kept on compacted topics.",
		Synonyms: []Synonym{{Name: "log.cleaner.delete.retention.ms"}}},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", Check: atLeast(0),
		Doc:      "Wait before a deleted segment's files are removed from disk.",
		Synonyms: []Synonym{{Name: "log.segment.delete.delay.ms"}}},
	{Name: "flush.messages", Type: TypeLong, Default: maxLong, Check: atLeast(1),
		Doc:      "Force an fsync after this many records (the default leaves durability to the page cache).",
		Synonyms: []Synonym{{Name: "log.flush.interval.messages"}}},
	{Name: "flush.ms", Type: TypeLong, Default: maxLong, Check: atLeast(0),
		Doc:      "Force an fsync after this much time.",
		Synonyms: []Synonym{{Name: "log.flush.interval.ms"}, {Name: "log.flush.scheduler.interval.ms"}}},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Check: throttledReplicas("follower.replication.throttled.replicas"),
		Doc: "Replicas whose follower-side replication is throttled: partition:broker pairs, or *."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", Check: atLeast(0),
		Doc:      "Bytes of log between two entries of the sparse offset index.",
		Synonyms: []Synonym{{Name: "log.index.interval.bytes"}}},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Check: throttledReplicas("leader.replication.throttled.replicas"),
		Doc: "Replicas whose leader-side replication is throttled: partition:broker pairs, or *."},
	{Name: "local.retention.bytes", Type: TypeLong, Default: "-2", Check: atLeast(-2),
		Doc:      "Local retention in bytes when tiered storage is on (-2 means use retention.bytes).",
		Synonyms: []Synonym{{Name: "log.local.retention.bytes"}}},
	{Name: "local.retention.ms", Type: TypeLong, Default: "-2", Check: atLeast(-2),
		Doc:      "Local retention in time when tiered storage is on (-2 means use retention.ms).",
		Synonyms: []Synonym{{Name: "log.local.retention.ms"}}},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Check: atLeast(1),
		Doc:      "Longest time a record may stay uncompacted.",
		Synonyms: []Synonym{{Name: "log.cleaner.max.compaction.lag.ms"}}},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", Check: atLeast(0),
		Doc:      "Largest record batch the topic accepts, after compression.",
		Synonyms: []Synonym{{Name: "message.max.bytes"}}},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Check: atLeast(0),
		Doc:      "How far in the future a CreateTime timestamp may be, relative to the broker clock.",
		Synonyms: []Synonym{{Name: "log.message.timestamp.after.max.ms"}}},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Check: atLeast(0),
		Doc:      "How far in the past a CreateTime timestamp may be, relative to the broker clock.",
		Synonyms: []Synonym{{Name: "log.message.timestamp.before.max.ms"}}},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", Check: oneOf("CreateTime", "LogAppendTime"),
		Doc:      "Whether record timestamps are the producer's (CreateTime) or the broker's append time (LogAppendTime).",
		Synonyms: []Synonym{{Name: "log.message.timestamp.type"}}},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", Check: betweenFloat(0, 1),
		Doc:      "Share of a compacted log that must be uncompacted before the cleaner runs.",
		Synonyms: []Synonym{{Name: "log.cleaner.min.cleanable.ratio"}}},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", Check: atLeast(0),
		Doc:      "Shortest time a record stays uncompacted.",
		Synonyms: []Synonym{{Name: "log.cleaner.min.compaction.lag.ms"}}},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Check: atLeast(1),
		Doc:      "Replicas that must acknowledge an acks=all write.",
		Synonyms: []Synonym{{Name: "min.insync.replicas"}}},
	{Name: "preallocate", Type: TypeBoolean, Default: "false",
		Doc:      "Preallocate segment files on creation.",
		Synonyms: []Synonym{{Name: "log.preallocate"}}},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false",
		Doc: "Tiered storage for this topic (not supported by kbroker; accepted as false only)."},
	{Name: "remote.log.copy.disable", Type: TypeBoolean, Default: "false",
		Doc: "Stop copying segments to tiered storage."},
	{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: "false",
		Doc: "Delete tiered data when tiered storage is turned off for the topic."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1",
		Doc:      "Largest size a partition may grow to before old segments are deleted (-1: no limit).",
		Synonyms: []Synonym{{Name: "log.retention.bytes"}}},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", Check: atLeast(-1),
		Doc: "How long records are kept before their segment is deleted (-1: forever).",
		Synonyms: []Synonym{{Name: "log.retention.ms", Convert: retentionMillis(1)}, {Name: "log.retention.minutes", Convert: retentionMillis(60_000)},
			{Name: "log.retention.hours", Convert: retentionMillis(3_600_000)}}},
	// Kafka 4.0 raised the floor from 14 bytes to 1 MiB (KIP-1030): a
	// segment smaller than a batch fails every produce.
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", Check: atLeast(1 << 20),
		Doc:      "Size at which the active segment is closed and a new one started (at least 1 MiB). internal.segment.bytes, when set, takes its place.",
		Synonyms: []Synonym{{Name: "log.segment.bytes"}}},
	// Kafka 4.0 kept a way for tests to use small segments below the new
	// segment.bytes floor: this internal key, which overrides
	// segment.bytes when a topic sets it. Kafka does not bound it; kbroker
	// keeps the old 14-byte floor, the smallest segment its storage takes.
	{Name: "internal.segment.bytes", Type: TypeInt, NoDefault: true, Check: atLeast(14), Internal: true,
		Doc: "Internal (for tests): segment size that overrides segment.bytes, without its 1 MiB floor."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", Check: atLeast(4),
		Doc:      "Size of a segment's offset index; a full index rolls the segment.",
		Synonyms: []Synonym{{Name: "log.index.size.max.bytes"}}},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", Check: atLeast(0),
		Doc:      "Random reduction of segment.ms, so that many partitions do not roll at once.",
		Synonyms: []Synonym{{Name: "log.roll.jitter.ms"}, {Name: "log.roll.jitter.hours", Convert: scale(3_600_000)}}},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", Check: atLeast(1),
		Doc:      "Age at which the active segment is rolled even if not full, so retention can delete it.",
		Synonyms: []Synonym{{Name: "log.roll.ms"}, {Name: "log.roll.hours", Convert: scale(3_600_000)}}},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false",
		Doc:      "Allow an out-of-sync replica to become leader, losing data.",
		Synonyms: []Synonym{{Name: "unclean.leader.election.enable"}}},
}))

// appliedBy sets the applier of every def but the throttled replica
// lists, which the replication throttles follow (ApplyReplicationQuotas):
// the logs have no use for them.
func appliedBy(a Applier, defs []*Def) []*Def {
	for _, d := range defs {
		d.AppliedBy = a
		if strings.HasSuffix(d.Name, ".replication.throttled.replicas") {
			d.AppliedBy = ApplyReplicationQuotas
		}
	}
	return defs
}

// throttledReplicas checks a throttled replica list as Kafka's
// ThrottledReplicaListValidator: the literal * or partition:broker pairs.
func throttledReplicas(name string) func(string) error {
	return func(v string) error {
		if strings.TrimSpace(v) == "*" {
			return nil
		}
		for _, item := range strings.Split(v, ",") {
			if !throttledReplicaPattern.MatchString(strings.TrimSpace(item)) {
				return fmt.Errorf("%s must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", name)
			}
		}
		return nil
	}
}

var throttledReplicaPattern = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

func gzipLevel(v string) error {
	if v == "-1" {
		return nil
	}
	if between(1, 9)(v) != nil {
		return errString("Value must be -1 or in the range [1, 9]")
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }
