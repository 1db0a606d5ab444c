package interop

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// retentionCheckMs is how often the effect tests' brokers apply retention,
// so that a retention change shows within a fraction of a second.
const retentionCheckMs = 50

// effectBroker starts a broker whose single log dir is returned, with
// retention checked every retentionCheckMs.
func effectBroker(t *testing.T) (addr, logDir string) {
	t.Helper()
	logDir = t.TempDir()
	b := brokertest.StartWith(t, testProps(logDir, config.Properties{
		"log.retention.check.interval.ms": strconv.Itoa(retentionCheckMs),
	}))
	return b.Addr(), logDir
}

// createTopicWith creates a one-partition topic with config overrides
// given as key, value pairs.
func createTopicWith(t *testing.T, adm *kadm.Client, topic string, kv ...string) {
	t.Helper()
	resp, err := adm.CreateTopic(testkit.Context(t, 10*time.Second), 1, 1, configMap(kv), topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s with %v: %v", topic, kv, err)
	}
}

func configMap(kv []string) map[string]*string {
	m := map[string]*string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kadm.StringPtr(kv[i+1])
	}
	return m
}

func alterOps(kv []string) []kadm.AlterConfig {
	var ops []kadm.AlterConfig
	for name, v := range configMap(kv) {
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: v})
	}
	return ops
}

// setTopicConfigs sets topic configs (key, value pairs) with
// IncrementalAlterConfigs.
func setTopicConfigs(t *testing.T, adm *kadm.Client, topic string, kv ...string) {
	t.Helper()
	resps, err := adm.AlterTopicConfigs(testkit.Context(t, 10*time.Second), alterOps(kv), topic)
	if err == nil {
		_, err = resps.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
	}
	if err != nil {
		t.Fatalf("alter configs of topic %s to %v: %v", topic, kv, err)
	}
}

// setClusterDefault sets cluster-wide broker configs (the broker resource
// named "") with IncrementalAlterConfigs.
func setClusterDefault(t *testing.T, adm *kadm.Client, kv ...string) {
	t.Helper()
	resps, err := adm.AlterBrokerConfigs(testkit.Context(t, 10*time.Second), alterOps(kv))
	if err == nil {
		_, err = resps.On("", func(r *kadm.AlterConfigsResponse) error { return r.Err })
	}
	if err != nil {
		t.Fatalf("alter cluster-default broker configs to %v: %v", kv, err)
	}
}

// startOffset is ListOffsets' earliest offset of partition 0 of topic.
func startOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	listed, err := adm.ListStartOffsets(testkit.Context(t, 10*time.Second), topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets of %s: %v", topic, err)
	}
	o, ok := listed.Lookup(topic, 0)
	if !ok {
		t.Fatalf("list start offsets of %s: no partition 0", topic)
	}
	return o.Offset
}

// segmentFile is one <base offset>.log file of a partition directory.
type segmentFile struct {
	base int64
	size int64
}

// segments lists the segment files of partition 0 of topic under logDir,
// by base offset.
func segments(t *testing.T, logDir, topic string) []segmentFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(logDir, topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []segmentFile
	for _, p := range paths {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(p), ".log"), 10, 64)
		if err != nil {
			t.Fatalf("segment file %s: name is not a base offset", p)
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted by a retention pass since the Glob
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, segmentFile{base, fi.Size()})
	}
	slices.SortFunc(out, func(a, b segmentFile) int { return int(a.base - b.base) })
	return out
}

// rawProducer is a client that sends batches uncompressed, so that the
// bytes produced are the bytes stored.
func rawProducer(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return testkit.Client(t, addr, append([]kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
}

// produceEach produces n records to partition 0 of topic one at a time (one
// batch each), each with a value of size bytes and timestamp ts.
func produceEach(t *testing.T, cl *kgo.Client, topic string, n, size int, ts time.Time) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte{'a' + byte(i%26)}, size), Timestamp: ts}
		if err := cl.ProduceSync(testkit.Context(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce record %d to %s: %v", i, topic, err)
		}
	}
}

// eventually polls cond every 20ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Lowering retention.ms on a topic deletes its old segments on the next
// retention pass, without a restart: the start offset moves forward to the
// first segment holding a record younger than the new retention, the older
// segment files go, and the younger records stay readable.
func TestConfigRetentionMsDeletesOldSegments(t *testing.T) {
	addr, logDir := effectBroker(t)
	adm := newAdmin(t, addr)
	const topic = "retention-lowered"
	createTopicWith(t, adm, topic, "internal.segment.bytes", "1024")
	cl := rawProducer(t, addr)
	const old, young = 40, 10
	produceEach(t, cl, topic, old, 200, time.Now().Add(-2*time.Hour))
	produceEach(t, cl, topic, young, 200, time.Now())
	before := segments(t, logDir, topic)
	if len(before) < 10 {
		t.Fatalf("%d records of 200 bytes with segment.bytes=1024 made %d segments, want 10+: %v", old+young, len(before), before)
	}
	// Control: under the default retention (7 days) retention passes delete
	// nothing.
	time.Sleep(5 * retentionCheckMs * time.Millisecond)
	if start := startOffset(t, adm, topic); start != 0 {
		t.Fatalf("start offset %d before retention.ms was lowered, want 0", start)
	}

	setTopicConfigs(t, adm, topic, "retention.ms", "3600000")
	var start int64
	if !eventually(5*time.Second, func() bool { start = startOffset(t, adm, topic); return start > 0 }) {
		t.Fatalf("start offset still 0 five seconds after retention.ms was lowered to 1h")
	}
	// Only segments wholly older than an hour go: the first young record's
	// segment stays.
	if start > old || start < old-5 {
		t.Errorf("start offset %d after retention.ms=1h, want the base of the segment holding offset %d", start, old)
	}
	// The files go right after the start offset moves (kbroker removes
	// them at once; Kafka after file.delete.delay.ms).
	var after []segmentFile
	if !eventually(5*time.Second, func() bool { after = segments(t, logDir, topic); return len(after) > 0 && after[0].base == start }) {
		t.Errorf("segment files after retention: %v, want the first at the start offset %d", after, start)
	}
	if len(after) >= len(before) {
		t.Errorf("%d segment files after retention, %d before; want old ones deleted", len(after), len(before))
	}
	got := consumeAll(t, addr, topic, 10*time.Second)[0]
	if want := old + young - int(start); len(got) != want || got[0].Offset != start {
		t.Errorf("consuming from the start read %s, want %d records from offset %d", progress(map[int32][]*kgo.Record{0: got}), want, start)
	}
}

// message.timestamp.type=LogAppendTime, set on a live topic, makes the
// records produced from then on carry the broker's clock, and say so in
// their attributes; records already stored keep their CreateTime.
func TestConfigLogAppendTime(t *testing.T) {
	addr, _ := effectBroker(t)
	adm := newAdmin(t, addr)
	const topic = "log-append-time"
	createTopicWith(t, adm, topic)
	cl := testkit.Client(t, addr)
	// An hour old: older than the broker's clock, but well within the
	// default retention (the broker checks retention every
	// retentionCheckMs, and would delete a record years old before it is
	// read back).
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produce := func(value string) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Value: []byte(value), Timestamp: old}
		if err := cl.ProduceSync(testkit.Context(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", value, err)
		}
	}
	produce("before")
	setTopicConfigs(t, adm, topic, "message.timestamp.type", "LogAppendTime")
	from := time.Now().Truncate(time.Millisecond)
	produce("after")
	to := time.Now()

	got := consumeAll(t, addr, topic, 10*time.Second)[0]
	if len(got) != 2 {
		t.Fatalf("consumed %d records, want 2: %s", len(got), progress(map[int32][]*kgo.Record{0: got}))
	}
	if r := got[0]; r.Attrs.TimestampType() != 0 || !r.Timestamp.Equal(old) {
		t.Errorf("record produced before the change: timestamp %v type %d, want the producer's %v (CreateTime, 0)", r.Timestamp, r.Attrs.TimestampType(), old)
	}
	r := got[1]
	if r.Attrs.TimestampType() != 1 {
		t.Errorf("record produced after message.timestamp.type=LogAppendTime: timestamp type %d, want 1 (LogAppendTime)", r.Attrs.TimestampType())
	}
	if r.Timestamp.Before(from) || r.Timestamp.After(to) {
		t.Errorf("record produced after message.timestamp.type=LogAppendTime: timestamp %v, want the broker's append time in [%v, %v]", r.Timestamp, from, to)
	}
}

// message.timestamp.before.max.ms and after.max.ms, set on a live topic,
// make the broker refuse CreateTime records too far in the past or future
// with INVALID_TIMESTAMP, and only those.
func TestConfigTimestampBounds(t *testing.T) {
	addr, _ := effectBroker(t)
	adm := newAdmin(t, addr)
	const topic = "timestamp-bounds"
	createTopicWith(t, adm, topic)
	// Without idempotence a refused batch fails only its own records.
	cl := testkit.Client(t, addr, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	produce := func(ts time.Time) error {
		r := &kgo.Record{Topic: topic, Value: []byte(ts.String()), Timestamp: ts}
		return cl.ProduceSync(testkit.Context(t, 10*time.Second), r).FirstErr()
	}
	past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	future := func() time.Time { return time.Now().Add(10 * time.Minute) }

	// Kafka 4's defaults: any past timestamp, up to an hour ahead.
	if err := produce(past()); err != nil {
		t.Fatalf("record two hours old under the default before.max.ms: %v", err)
	}
	if err := produce(future()); err != nil {
		t.Fatalf("record ten minutes ahead under the default after.max.ms (1h): %v", err)
	}

	setTopicConfigs(t, adm, topic, "message.timestamp.before.max.ms", "3600000", "message.timestamp.after.max.ms", "60000")
	if err := produce(past()); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Errorf("record two hours old with before.max.ms=1h: %v, want %v", err, kerr.InvalidTimestamp)
	}
	if err := produce(future()); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Errorf("record ten minutes ahead with after.max.ms=1m: %v, want %v", err, kerr.InvalidTimestamp)
	}
	if err := produce(time.Now().Add(-30 * time.Minute)); err != nil {
		t.Errorf("record 30 minutes old with before.max.ms=1h: %v", err)
	}
	if err := produce(time.Now()); err != nil {
		t.Errorf("record timestamped now: %v", err)
	}
	// Every record of a batch is checked, not only its max timestamp: one
	// old record refuses the whole batch (Kafka answers INVALID_TIMESTAMP
	// for the batch, naming the record).
	lingering := testkit.Client(t, addr, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.ProducerLinger(200*time.Millisecond))
	results := lingering.ProduceSync(testkit.Context(t, 10*time.Second),
		&kgo.Record{Topic: topic, Value: []byte("fresh"), Timestamp: time.Now()},
		&kgo.Record{Topic: topic, Value: []byte("stale"), Timestamp: past()})
	for _, r := range results {
		if !errors.Is(r.Err, kerr.InvalidTimestamp) {
			t.Errorf("record %q in a batch with a record two hours old: %v, want %v", r.Record.Value, r.Err, kerr.InvalidTimestamp)
		}
	}
	if n := len(consumeAll(t, addr, topic, 10*time.Second)[0]); n != 4 {
		t.Errorf("topic holds %d records, want the 4 accepted ones", n)
	}
}

// A cluster-wide log.retention.ms (broker resource "") applies to every
// topic without its own retention.ms at once; a topic's override beats it.
func TestConfigClusterDefaultRetention(t *testing.T) {
	addr, logDir := effectBroker(t)
	adm := newAdmin(t, addr)
	const inherits, overrides = "inherits-default", "overrides-default"
	createTopicWith(t, adm, inherits, "internal.segment.bytes", "1024")
	createTopicWith(t, adm, overrides, "internal.segment.bytes", "1024", "retention.ms", "604800000")
	cl := rawProducer(t, addr)
	for _, topic := range []string{inherits, overrides} {
		produceEach(t, cl, topic, 20, 200, time.Now().Add(-2*time.Hour))
		produceEach(t, cl, topic, 5, 200, time.Now())
	}
	time.Sleep(5 * retentionCheckMs * time.Millisecond)
	if start := startOffset(t, adm, inherits); start != 0 {
		t.Fatalf("%s: start offset %d under the default retention (7d), want 0", inherits, start)
	}

	kept := segments(t, logDir, overrides)
	setClusterDefault(t, adm, "log.retention.ms", "3600000")
	if !eventually(5*time.Second, func() bool { return startOffset(t, adm, inherits) > 0 }) {
		t.Fatalf("%s: start offset still 0 five seconds after the cluster default log.retention.ms=1h", inherits)
	}
	// Retention passes go over every partition; a few more must leave the
	// topic with its own retention.ms alone.
	time.Sleep(5 * retentionCheckMs * time.Millisecond)
	if start := startOffset(t, adm, overrides); start != 0 {
		t.Errorf("%s (retention.ms=7d override): start offset %d after the cluster default changed, want 0", overrides, start)
	}
	if got := segments(t, logDir, overrides); !slices.Equal(got, kept) {
		t.Errorf("%s: segment files %v after the cluster default changed, want all of %v", overrides, got, kept)
	}

	described, err := adm.DescribeTopicConfigs(testkit.Context(t, 10*time.Second), inherits, overrides)
	if err != nil {
		t.Fatalf("describe topic configs: %v", err)
	}
	for topic, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		inherits:  {"3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		overrides: {"604800000", kmsg.ConfigSourceDynamicTopicConfig},
	} {
		rc, err := described.On(topic, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
		}
		i := slices.IndexFunc(rc.Configs, func(c kadm.Config) bool { return c.Key == "retention.ms" })
		if i < 0 {
			t.Fatalf("describe %s: no retention.ms", topic)
		}
		if c := rc.Configs[i]; c.MaybeValue() != want.value || c.Source != want.source {
			t.Errorf("%s: retention.ms = %q from %v, want %q from %v", topic, c.MaybeValue(), c.Source, want.value, want.source)
		}
	}
}

// segment.bytes changed on a live topic makes the next append roll a new
// segment and the following ones roll at the new size.
func TestConfigSegmentBytesAtRuntime(t *testing.T) {
	addr, logDir := effectBroker(t)
	adm := newAdmin(t, addr)
	const topic = "segment-bytes-changed"
	createTopicWith(t, adm, topic)
	cl := rawProducer(t, addr)
	const n, size = 20, 1000
	produceEach(t, cl, topic, n, size, time.Now())
	if segs := segments(t, logDir, topic); len(segs) != 1 {
		t.Fatalf("%d records under the default segment.bytes (1 GiB) made segments %v, want one", n, segs)
	}

	const segmentBytes = 4096
	setTopicConfigs(t, adm, topic, "internal.segment.bytes", strconv.Itoa(segmentBytes))
	produceEach(t, cl, topic, n, size, time.Now())
	segs := segments(t, logDir, topic)
	if len(segs) < 2 || segs[0].base != 0 || segs[1].base != n {
		t.Fatalf("segments after segment.bytes=%d: %v; want the old one (base 0) and a new one from offset %d", segmentBytes, segs, n)
	}
	if segs[0].size < n*size {
		t.Errorf("first segment holds %d bytes, want all %d records written before the change (>= %d bytes)", segs[0].size, n, n*size)
	}
	// Each record batch is a little over size bytes, so a 4096-byte segment
	// holds three of them: the n new records need about n/3 segments.
	if want := n / 3; len(segs)-1 < want {
		t.Errorf("%d segments for %d records of %d bytes after segment.bytes=%d, want at least %d: %v", len(segs)-1, n, size, segmentBytes, want, segs)
	}
	for _, s := range segs[1 : len(segs)-1] {
		if s.size > segmentBytes {
			t.Errorf("segment %d is %d bytes, above segment.bytes=%d", s.base, s.size, segmentBytes)
		}
	}
	if got := consumeAll(t, addr, topic, 10*time.Second)[0]; len(got) != 2*n {
		t.Errorf("consumed %d records across the segments, want %d", len(got), 2*n)
	}
}

// describedConfigs is every config of one resource: name → value and
// source, as DescribeConfigs reports them.
func describedConfigs(t *testing.T, adm *kadm.Client, kind kmsg.ConfigResourceType, name string) map[string]string {
	t.Helper()
	ctx := testkit.Context(t, 10*time.Second)
	var (
		rcs kadm.ResourceConfigs
		err error
	)
	switch {
	case kind == kmsg.ConfigResourceTypeTopic:
		rcs, err = adm.DescribeTopicConfigs(ctx, name)
	case name == "":
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	default:
		id, _ := strconv.Atoi(name)
		rcs, err = adm.DescribeBrokerConfigs(ctx, int32(id))
	}
	if err != nil {
		t.Fatalf("describe %v %q: %v", kind, name, err)
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe %v %q: %v", kind, name, err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		out[c.Key] = c.MaybeValue() + " from " + c.Source.String()
	}
	return out
}

// Topic, per-broker and cluster-default overrides survive a restart: after
// Close and a new broker over the same log.dirs, describe shows the same
// values from the same sources, and the topic's overrides govern its log
// again.
func TestConfigOverridesSurviveRestart(t *testing.T) {
	props := testProps(t.TempDir(), config.Properties{"log.retention.hours": "48"})
	b := brokertest.StartWith(t, props)
	adm := newAdmin(t, b.Addr())
	const topic, plain = "restart-overrides", "restart-plain"
	createTopicWith(t, adm, topic, "cleanup.policy", "compact")
	createTopicWith(t, adm, plain)
	setTopicConfigs(t, adm, topic, "message.timestamp.type", "LogAppendTime", "max.message.bytes", "4096")
	resps, err := adm.AlterBrokerConfigs(testkit.Context(t, 10*time.Second), alterOps([]string{"log.retention.ms", "7200000"}), 1)
	if err == nil {
		_, err = resps.On("1", func(r *kadm.AlterConfigsResponse) error { return r.Err })
	}
	if err != nil {
		t.Fatalf("alter configs of broker 1: %v", err)
	}
	setClusterDefault(t, adm, "log.segment.bytes", "2097152", "max.connections", "1000")

	type resource struct {
		kind kmsg.ConfigResourceType
		name string
	}
	resources := []resource{
		{kmsg.ConfigResourceTypeTopic, topic},
		{kmsg.ConfigResourceTypeTopic, plain},
		{kmsg.ConfigResourceTypeBroker, "1"},
		{kmsg.ConfigResourceTypeBroker, ""},
	}
	before := map[resource]map[string]string{}
	for _, r := range resources {
		before[r] = describedConfigs(t, adm, r.kind, r.name)
	}
	// What the overrides must look like (sources as kmsg names them).
	for _, c := range []struct {
		res        resource
		key, value string
	}{
		{resources[0], "cleanup.policy", "compact from DYNAMIC_TOPIC_CONFIG"},
		{resources[0], "message.timestamp.type", "LogAppendTime from DYNAMIC_TOPIC_CONFIG"},
		{resources[0], "max.message.bytes", "4096 from DYNAMIC_TOPIC_CONFIG"},
		{resources[0], "retention.ms", "7200000 from DYNAMIC_BROKER_CONFIG"},
		{resources[0], "segment.bytes", "2097152 from DYNAMIC_DEFAULT_BROKER_CONFIG"},
		{resources[1], "cleanup.policy", "delete from DEFAULT_CONFIG"},
		{resources[1], "retention.ms", "7200000 from DYNAMIC_BROKER_CONFIG"},
		{resources[2], "log.retention.ms", "7200000 from DYNAMIC_BROKER_CONFIG"},
		{resources[2], "log.retention.hours", "48 from STATIC_BROKER_CONFIG"},
		{resources[2], "max.connections", "1000 from DYNAMIC_DEFAULT_BROKER_CONFIG"},
		{resources[3], "log.segment.bytes", "2097152 from DYNAMIC_DEFAULT_BROKER_CONFIG"},
		{resources[3], "max.connections", "1000 from DYNAMIC_DEFAULT_BROKER_CONFIG"},
	} {
		if got := before[c.res][c.key]; got != c.value {
			t.Errorf("before restart, %v %q %s = %s, want %s", c.res.kind, c.res.name, c.key, got, c.value)
		}
	}
	if n := len(before[resources[3]]); n != 2 {
		t.Errorf("cluster default holds %d configs, want the 2 set: %v", n, before[resources[3]])
	}

	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b = brokertest.StartWith(t, props)
	adm = newAdmin(t, b.Addr())
	for _, r := range resources {
		after := describedConfigs(t, adm, r.kind, r.name)
		for _, k := range unionKeys(before[r], after) {
			if before[r][k] != after[k] {
				t.Errorf("after restart, %v %q %s = %q, was %q", r.kind, r.name, k, after[k], before[r][k])
			}
		}
	}

	// The restored overrides govern the reopened log: LogAppendTime stamps
	// new records, and max.message.bytes=4096 refuses a bigger batch.
	cl := rawProducer(t, b.Addr(), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	from := time.Now().Truncate(time.Millisecond)
	err = cl.ProduceSync(testkit.Context(t, 10*time.Second), &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("small"), Timestamp: time.Unix(1, 0)}).FirstErr()
	if err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	err = cl.ProduceSync(testkit.Context(t, 10*time.Second), &kgo.Record{Topic: topic, Key: []byte("k"), Value: make([]byte, 8192)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("produce of 8 KiB after restart with max.message.bytes=4096: %v, want %v", err, kerr.MessageTooLarge)
	}
	got := consumeAll(t, b.Addr(), topic, 10*time.Second)[0]
	if len(got) != 1 || got[0].Attrs.TimestampType() != 1 || got[0].Timestamp.Before(from) {
		t.Errorf("after restart the topic holds %d records; first: %+v; want one LogAppendTime record stamped after %v", len(got), got, from)
	}
}

// unionKeys lists the keys of a and b, sorted.
func unionKeys(a, b map[string]string) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
