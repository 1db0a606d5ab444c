package admin

// Topics: CreateTopics (19), DeleteTopics (20), CreatePartitions (37) and
// Metadata (3) for listing and describing.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewTopic describes a topic to create.
type NewTopic struct {
	Name string
	// Partitions and ReplicationFactor of -1 (or 0) take the broker's
	// num.partitions and default.replication.factor.
	Partitions        int32
	ReplicationFactor int16
	// Configs are topic config overrides (retention.ms…).
	Configs map[string]string
}

// TopicResult is the outcome for one topic.
type TopicResult struct {
	Topic string
	// Err is this topic's error (an *Error), nil on success.
	Err error
}

// TopicResults holds one result per topic, in request order.
type TopicResults []TopicResult

// All joins the errors of the topics that failed; nil when all succeeded.
func (rs TopicResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

func newTopicResults(names []string) TopicResults {
	rs := make(TopicResults, len(names))
	for i, n := range names {
		rs[i].Topic = n
	}
	return rs
}

func (rs TopicResults) set(topic string, err error) {
	for i := range rs {
		if rs[i].Topic == topic {
			rs[i].Err = err
		}
	}
}

// CreateTopics creates topics; with validateOnly the broker only checks
// that it could.
func (c *Client) CreateTopics(ctx context.Context, topics []NewTopic, validateOnly bool) (TopicResults, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = timeoutMillis(ctx)
	var names []string
	for _, t := range topics {
		names = append(names, t.Name)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
		if rt.NumPartitions == 0 {
			rt.NumPartitions = -1
		}
		if rt.ReplicationFactor == 0 {
			rt.ReplicationFactor = -1
		}
		keys := make([]string, 0, len(t.Configs))
		for k := range t.Configs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, kmsg.StringPtr(t.Configs[k])
			rt.Configs = append(rt.Configs, cfg)
		}
		req.Topics = append(req.Topics, rt)
	}
	results := newTopicResults(names)
	if len(topics) == 0 {
		return results, nil
	}
	resp, err := request[*kmsg.CreateTopicsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		results.set(t.Topic, codeError("topic "+t.Topic, t.ErrorCode, t.ErrorMessage))
	}
	return results, nil
}

// DeleteTopics deletes topics by name.
func (c *Client) DeleteTopics(ctx context.Context, names ...string) (TopicResults, error) {
	results := newTopicResults(names)
	if len(names) == 0 {
		return results, nil
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	req.TopicNames = names
	for _, n := range names {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := request[*kmsg.DeleteTopicsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			results.set(*t.Topic, codeError("topic "+*t.Topic, t.ErrorCode, t.ErrorMessage))
		}
	}
	return results, nil
}

// CreatePartitions raises topics' partition counts to the given totals
// (Kafka never removes partitions).
func (c *Client) CreatePartitions(ctx context.Context, totals map[string]int32, validateOnly bool) (TopicResults, error) {
	names := make([]string, 0, len(totals))
	for n := range totals {
		names = append(names, n)
	}
	slices.Sort(names)
	results := newTopicResults(names)
	if len(names) == 0 {
		return results, nil
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = timeoutMillis(ctx)
	for _, n := range names {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = n, totals[n]
		req.Topics = append(req.Topics, rt)
	}
	resp, err := request[*kmsg.CreatePartitionsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		results.set(t.Topic, codeError("topic "+t.Topic, t.ErrorCode, t.ErrorMessage))
	}
	return results, nil
}

// PartitionInfo is one partition's placement.
type PartitionInfo struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	Offline   []int32 `json:"offline,omitempty"`
}

// TopicDescription is a topic as Metadata describes it.
type TopicDescription struct {
	Name       string          `json:"name"`
	ID         string          `json:"id"`
	Internal   bool            `json:"internal"`
	Partitions []PartitionInfo `json:"partitions"`
	// Err is this topic's error (UNKNOWN_TOPIC_OR_PARTITION…).
	Err error `json:"-"`
}

// ReplicationFactor is the replica count of the first partition.
func (t TopicDescription) ReplicationFactor() int {
	if len(t.Partitions) == 0 {
		return 0
	}
	return len(t.Partitions[0].Replicas)
}

// DescribeTopics describes the named topics, or every topic when none are
// named, sorted by name. It never creates topics (even where the broker
// auto-creates on Metadata).
func (c *Client) DescribeTopics(ctx context.Context, names ...string) ([]TopicDescription, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	if len(names) > 0 {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := request[*kmsg.MetadataResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	var out []TopicDescription
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		d := TopicDescription{Name: *t.Topic, Internal: t.IsInternal, ID: topicID(t.TopicID)}
		d.Err = codeError("topic "+d.Name, t.ErrorCode, nil)
		for _, p := range t.Partitions {
			d.Partitions = append(d.Partitions, PartitionInfo{
				Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas,
			})
		}
		slices.SortFunc(d.Partitions, func(a, b PartitionInfo) int { return int(a.Partition - b.Partition) })
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b TopicDescription) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListTopics lists topic names, sorted; internal topics (__consumer_offsets…)
// only with includeInternal.
func (c *Client) ListTopics(ctx context.Context, includeInternal bool) ([]string, error) {
	ds, err := c.DescribeTopics(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range ds {
		if d.Internal && !includeInternal {
			continue
		}
		names = append(names, d.Name)
	}
	return names, nil
}
