package replica

// The logs applier of the dynamic configuration: the open logs of a topic
// get its effective configs again when its overrides change, and every
// open log when a broker key that supplies a topic config's default
// changes. Nothing else wakes it: a certificate rotation leaves the logs
// alone.

import (
	"strconv"
	"strings"
	"sync/atomic"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// logConfigs is what Partitions keeps of the dynamic configuration.
type logConfigs struct {
	dyn *dynconfig.Configs
	// brokerMinISR caches the broker-level min.insync.replicas, which
	// Produce checks on every acks=all request.
	brokerMinISR atomic.Int32
	// reconfigured counts the open logs given new configs, so a test can
	// tell which changes reach the logs.
	reconfigured atomic.Int64
}

func (p *Partitions) registerLogConfigs(dyn *dynconfig.Configs) {
	p.configs.dyn = dyn
	p.cacheBrokerSettings(p.store.Snapshot())
	dyn.Register(config.ApplyLogs, dynconfig.Applier{Apply: p.applyLogConfigs})
}

// storageConfig is the settings of topic's partition logs in snap.
func (p *Partitions) storageConfig(snap *meta.Snapshot, topic string) storage.Config {
	return StorageConfig(p.configs.dyn.Layers(snap, topic))
}

// MinInsyncReplicas is the topic's effective min.insync.replicas in snap.
func (p *Partitions) MinInsyncReplicas(snap *meta.Snapshot, topic string) int {
	if v, ok := snap.TopicConfig(topic)["min.insync.replicas"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return int(p.configs.brokerMinISR.Load())
}

// cacheBrokerSettings keeps the broker-level values that the hot path reads.
func (p *Partitions) cacheBrokerSettings(snap *meta.Snapshot) {
	n, _ := strconv.Atoi(config.TopicValue("min.insync.replicas", p.configs.dyn.Layers(snap, "")))
	p.configs.brokerMinISR.Store(int32(n))
}

// applyLogConfigs gives the open logs of the topics a change touched their
// effective configs: the topics whose overrides changed, or every topic
// when a broker-level default changed.
func (p *Partitions) applyLogConfigs(ch dynconfig.Change) {
	topics := ch.Topics
	if ch.Full || len(ch.Keys) > 0 {
		p.cacheBrokerSettings(ch.Snap)
		topics = topics[:0:0]
		for name := range ch.Snap.AllTopics() {
			topics = append(topics, name)
		}
	}
	for _, name := range topics {
		t := ch.Snap.Topic(name)
		if t == nil {
			continue
		}
		cfg := p.storageConfig(ch.Snap, name)
		for i := int32(0); i < t.Partitions; i++ {
			if l := p.logs.Get(name, i); l != nil {
				l.SetConfig(cfg)
				p.configs.reconfigured.Add(1)
			}
		}
	}
}

// StorageConfig turns a topic's effective configs into its partition logs'
// settings.
func StorageConfig(l config.Layers) storage.Config {
	long := func(name string) int64 { return topicLong(name, l) }
	c := storage.DefaultConfig()
	c.SegmentBytes = long("segment.bytes")
	if config.TopicValue("internal.segment.bytes", l) != "" {
		c.SegmentBytes = long("internal.segment.bytes")
	}
	c.SegmentMs = long("segment.ms")
	c.RetentionMs = long("retention.ms")
	c.RetentionBytes = long("retention.bytes")
	c.IndexIntervalBytes = int32(long("index.interval.bytes"))
	c.SegmentIndexBytes = int32(long("segment.index.bytes"))
	c.MaxMessageBytes = int32(long("max.message.bytes"))
	c.TimestampBeforeMaxMs = long("message.timestamp.before.max.ms")
	c.TimestampAfterMaxMs = long("message.timestamp.after.max.ms")
	if config.TopicValue("message.timestamp.type", l) == "LogAppendTime" {
		c.TimestampType = storage.LogAppendTime
	} else {
		c.TimestampType = storage.CreateTime
	}
	c.CleanupPolicy = storage.CleanupPolicy{}
	for _, p := range config.SplitList(config.TopicValue("cleanup.policy", l)) {
		switch p {
		case "delete":
			c.CleanupPolicy.Delete = true
		case "compact":
			c.CleanupPolicy.Compact = true
		}
	}
	if r, err := strconv.ParseFloat(strings.TrimSpace(config.TopicValue("min.cleanable.dirty.ratio", l)), 64); err == nil {
		c.MinCleanableDirtyRatio = r
	}
	c.MinCompactionLagMs = long("min.compaction.lag.ms")
	c.MaxCompactionLagMs = long("max.compaction.lag.ms")
	c.DeleteRetentionMs = long("delete.retention.ms")
	c.CompressionType = map[string]storage.CompressionType{
		"producer": storage.CompressionProducer, "uncompressed": storage.CompressionUncompressed,
		"gzip": storage.CompressionGzip, "snappy": storage.CompressionSnappy,
		"lz4": storage.CompressionLz4, "zstd": storage.CompressionZstd,
	}[strings.TrimSpace(config.TopicValue("compression.type", l))] // unknown: producer
	c.GzipLevel = int(long("compression.gzip.level"))
	c.Lz4Level = int(long("compression.lz4.level"))
	c.ZstdLevel = int(long("compression.zstd.level"))
	// An unparsable value gives 0, which storage replaces by its default.
	c.ProducerIDExpirationMs, _ = strconv.ParseInt(strings.TrimSpace(config.BrokerValue("producer.id.expiration.ms", l)), 10, 64)
	// Kafka's flush.messages and flush.ms, with the broker defaults
	// log.flush.interval.messages and log.flush.interval.ms (which falls
	// back to log.flush.scheduler.interval.ms): a log forces its appends to
	// disk after that many records, or that long after its last flush.
	c.FlushMessages = long("flush.messages")
	c.FlushMs = long("flush.ms")
	return c
}

// topicLong is the effective value of an integer topic config (0 if it
// does not parse).
func topicLong(name string, l config.Layers) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(config.TopicValue(name, l)), 10, 64)
	return n
}

// FlushCheckInterval is log.flush.scheduler.interval.ms: how often the
// storage manager checks every log for a flush due by flush.ms (read only,
// as in Kafka).
func FlushCheckInterval(static config.Properties) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(config.BrokerValue("log.flush.scheduler.interval.ms", config.Layers{Static: static})), 10, 64)
	return v
}
