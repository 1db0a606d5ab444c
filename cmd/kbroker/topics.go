package main

// kbroker topics: kafka-topics.sh over the admin package (CreateTopics,
// DeleteTopics, CreatePartitions, Metadata and DescribeConfigs), and
// DescribeTopicPartitions for --describe's Elr and LastKnownElr columns, as
// Kafka 4's tool shows them (N/A from a broker without that API).

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
)

const topicsSynopsis = `kbroker topics --bootstrap-server host:port [--command-config file]
         (--create --topic t [--partitions n] [--replication-factor r] [--config k=v …] [--if-not-exists]
          | --list | --describe [--topic regex] | --alter --topic regex --partitions n | --delete --topic regex [--if-exists])`

const topicsExamples = `  kbroker topics --bootstrap-server localhost:9092 --create --topic orders --partitions 6 --config retention.ms=86400000 --config cleanup.policy=compact
  kbroker topics --bootstrap-server localhost:9092 --list
  kbroker topics --bootstrap-server localhost:9092 --describe --topic 'orders.*'
  kbroker topics --bootstrap-server localhost:9092 --alter --topic orders --partitions 12
  kbroker topics --bootstrap-server localhost:9092 --delete --topic orders
`

type topicsCmd struct {
	conn                                   connFlags
	create, list, describe, alter, del     bool
	topic                                  string
	partitions, replicationFactor          int
	configs                                stringList
	ifExists, ifNotExists, excludeInternal bool
	format                                 *formatFlag
	out, errOut                            io.Writer
}

func runTopics(args []string, out, errOut io.Writer) error {
	c := &topicsCmd{out: out, errOut: errOut}
	fs := newFlagSet("topics", topicsSynopsis, topicsExamples, out)
	c.conn.register(fs)
	fs.BoolVar(&c.create, "create", false, "create a topic")
	fs.BoolVar(&c.list, "list", false, "list topics")
	fs.BoolVar(&c.describe, "describe", false, "describe topics: partitions, leaders, replicas and overridden configs")
	fs.BoolVar(&c.alter, "alter", false, "raise the partition count of topics")
	fs.BoolVar(&c.del, "delete", false, "delete topics")
	fs.StringVar(&c.topic, "topic", "", "topic `name`; with --list/--describe/--alter/--delete a regular expression over names")
	fs.IntVar(&c.partitions, "partitions", -1, "partition `count` (default: the broker's num.partitions)")
	fs.IntVar(&c.replicationFactor, "replication-factor", -1, "replication `factor` (default: the broker's default.replication.factor)")
	fs.Var(&c.configs, "config", "topic config override `k=v` for --create (repeatable)")
	fs.BoolVar(&c.ifExists, "if-exists", false, "with --alter/--delete: do nothing when no topic matches")
	fs.BoolVar(&c.ifNotExists, "if-not-exists", false, "with --create: do nothing when the topic exists")
	fs.BoolVar(&c.excludeInternal, "exclude-internal", false, "with --list/--describe: leave internal topics out")
	c.format = registerFormat(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"create": c.create, "list": c.list, "describe": c.describe, "alter": c.alter, "delete": c.del})
	if err != nil {
		return err
	}
	if c.topic == "" && (action == "create" || action == "alter" || action == "delete") {
		return usagef("--%s needs --topic", action)
	}
	if action == "alter" && !flagGiven(fs, "partitions") {
		return usageError("--alter needs --partitions (topic configs are changed with kbroker configs)")
	}
	// Left out, --partitions and --replication-factor mean the broker's
	// default (-1 on the wire); given, they must be real counts, as
	// kafka-topics.sh checks before it sends anything.
	if flagGiven(fs, "partitions") && c.partitions < 1 {
		return usageError("The partitions must be greater than 0")
	}
	if flagGiven(fs, "replication-factor") && (c.replicationFactor < 1 || c.replicationFactor > math.MaxInt16) {
		return usagef("The replication factor must be between 1 and %d inclusive", math.MaxInt16)
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch action {
	case "create":
		return c.runCreate(ctx, cl)
	case "list":
		return c.runList(ctx, cl)
	case "describe":
		return c.runDescribe(ctx, cl)
	case "alter":
		return c.runAlter(ctx, cl)
	default:
		return c.runDelete(ctx, cl)
	}
}

func (c *topicsCmd) runCreate(ctx context.Context, cl *admin.Client) error {
	nt := admin.NewTopic{Name: c.topic, Partitions: int32(c.partitions), ReplicationFactor: int16(c.replicationFactor), Configs: map[string]string{}}
	for _, kv := range c.configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--config %q: want key=value", kv)
		}
		nt.Configs[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	rs, err := cl.CreateTopics(ctx, []admin.NewTopic{nt}, false)
	if err != nil {
		return err
	}
	if err := rs.All(); err != nil {
		if c.ifNotExists && isTopicExists(err) {
			return nil
		}
		return err
	}
	fmt.Fprintf(c.out, "Created topic %s.\n", c.topic)
	return nil
}

// matching lists the topics whose whole name matches --topic as a regular
// expression (as kafka-topics.sh does); every topic without --topic.
func (c *topicsCmd) matching(ctx context.Context, cl *admin.Client) ([]string, error) {
	names, err := cl.ListTopics(ctx, !c.excludeInternal)
	if err != nil || c.topic == "" {
		return names, err
	}
	re, err := regexp.Compile("^(?:" + c.topic + ")$")
	if err != nil {
		return nil, usagef("--topic %q is not a regular expression: %v", c.topic, err)
	}
	var out []string
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 && !c.ifExists {
		return nil, fmt.Errorf("Topic '%s' does not exist as expected", c.topic)
	}
	return out, nil
}

func (c *topicsCmd) runList(ctx context.Context, cl *admin.Client) error {
	names, err := c.matching(ctx, cl)
	if err != nil {
		return err
	}
	if *c.format == "json" {
		if names == nil {
			names = []string{}
		}
		return writeJSON(c.out, names)
	}
	for _, n := range names {
		fmt.Fprintln(c.out, n)
	}
	return nil
}

// describedTopic is one topic of --describe --format json.
type describedTopic struct {
	admin.TopicDescription
	// Partitions shadows TopicDescription's, with the ELR fields.
	Partitions        []describedPartition `json:"partitions"`
	ReplicationFactor int                  `json:"replication_factor"`
	Configs           map[string]string    `json:"configs"`
}

// describedPartition is a partition with its eligible leader replicas and
// last known leader (KIP-966); nil when the broker does not say.
type describedPartition struct {
	admin.PartitionInfo
	ELR          []int32 `json:"elr"`
	LastKnownELR []int32 `json:"last_known_elr"`
}

// partitionELR is what DescribeTopicPartitions says of one partition.
type partitionELR struct{ elr, lastKnown []int32 }

// describeELR pages through DescribeTopicPartitions for names (with its
// cursor) and returns each partition's ELR fields; nil when the broker
// does not serve the API (before Kafka 3.8).
func describeELR(ctx context.Context, cl *admin.Client, names []string) (map[string]map[int32]partitionELR, error) {
	if ok, err := cl.Supports(ctx, int16(kmsg.DescribeTopicPartitions)); err != nil || !ok {
		return nil, err
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 2000
	for _, n := range names {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]map[int32]partitionELR{}
	for {
		resp, err := req.RequestWith(ctx, cl.Kgo())
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue // Metadata reports the topic's error
			}
			ps := out[*t.Topic]
			if ps == nil {
				ps = map[int32]partitionELR{}
				out[*t.Topic] = ps
			}
			for _, p := range t.Partitions {
				ps[p.Partition] = partitionELR{elr: p.EligibleLeaderReplicas, lastKnown: p.LastKnownELR}
			}
		}
		if resp.NextCursor == nil {
			return out, nil
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

func (c *topicsCmd) runDescribe(ctx context.Context, cl *admin.Client) error {
	names, err := c.matching(ctx, cl)
	if err != nil {
		return err
	}
	prog := newProgress(c.errOut, "Describing topics", len(names))
	defer prog.finish()
	var out []describedTopic
	for start := 0; start < len(names); start += describeBatch {
		batch := names[start:min(start+describeBatch, len(names))]
		ds, err := cl.DescribeTopics(ctx, batch...)
		if err != nil {
			return err
		}
		res := make([]admin.ConfigResource, len(ds))
		for i, d := range ds {
			res[i] = admin.TopicResource(d.Name)
		}
		cfgs, err := cl.DescribeConfigs(ctx, res, admin.DescribeOptions{})
		if err != nil {
			return err
		}
		elrs, err := describeELR(ctx, cl, batch)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.Err != nil {
				return d.Err
			}
			dt := describedTopic{TopicDescription: d, ReplicationFactor: d.ReplicationFactor(), Configs: map[string]string{}}
			for _, p := range d.Partitions {
				dp := describedPartition{PartitionInfo: p}
				if e, ok := elrs[d.Name][p.Partition]; ok {
					dp.ELR, dp.LastKnownELR = orNone(e.elr), orNone(e.lastKnown)
				}
				dt.Partitions = append(dt.Partitions, dp)
			}
			if rc, ok := cfgs.On(admin.TopicResource(d.Name)); ok {
				for _, e := range rc.Entries {
					// kafka-topics.sh shows every value that is not the built-in default.
					if !e.IsDefault && e.Value != nil {
						dt.Configs[e.Name] = *e.Value
					}
				}
			}
			out = append(out, dt)
		}
		prog.update(start + len(batch))
	}
	prog.finish()
	if *c.format == "json" {
		if out == nil {
			out = []describedTopic{}
		}
		return writeJSON(c.out, out)
	}
	for _, t := range out {
		printTopic(c.out, t)
	}
	return nil
}

// printTopic writes kafka-topics.sh --describe's format.
func printTopic(w io.Writer, t describedTopic) {
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	sortStrings(keys)
	cfg := make([]string, len(keys))
	for i, k := range keys {
		cfg[i] = k + "=" + t.Configs[k]
	}
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		t.Name, t.ID, len(t.Partitions), t.ReplicationFactor, strings.Join(cfg, ","))
	for _, p := range t.Partitions {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tElr: %s\tLastKnownElr: %s\n",
			t.Name, p.Partition, leader, ids(p.Replicas), ids(p.ISR), idsOrNA(p.ELR), idsOrNA(p.LastKnownELR))
	}
}

// idsOrNA is ids, or N/A (as kafka-topics.sh prints) when unknown.
func idsOrNA(xs []int32) string {
	if xs == nil {
		return "N/A"
	}
	return ids(xs)
}

// orNone is xs, never nil: known and empty.
func orNone(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

func (c *topicsCmd) runAlter(ctx context.Context, cl *admin.Client) error {
	names, err := c.matching(ctx, cl)
	if err != nil {
		return err
	}
	totals := map[string]int32{}
	for _, n := range names {
		totals[n] = int32(c.partitions)
	}
	rs, err := cl.CreatePartitions(ctx, totals, false)
	if err != nil {
		return err
	}
	return rs.All()
}

func (c *topicsCmd) runDelete(ctx context.Context, cl *admin.Client) error {
	names, err := c.matching(ctx, cl)
	if err != nil {
		return err
	}
	rs, err := cl.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	return rs.All()
}
