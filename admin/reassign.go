package admin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/controller"
	"kbroker/internal/meta"
)

// Partition reassignment and leader elections: what kafka-reassign-partitions.sh
// and kafka-leader-election.sh do, over AlterPartitionReassignments (45),
// ListPartitionReassignments (46) and ElectLeaders (43).

// PartitionReplicas is one partition and a replica list: its assignment,
// or the target of a reassignment (nil replicas: cancel the one in
// progress). The JSON is kafka-reassign-partitions.sh's.
type PartitionReplicas struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// Name is "topic-partition", as Kafka's tools print a partition.
func (p PartitionReplicas) Name() string { return fmt.Sprintf("%s-%d", p.Topic, p.Partition) }

// ReassignmentPlan is the JSON document of kafka-reassign-partitions.sh:
// {"version":1,"partitions":[{"topic":…,"partition":…,"replicas":[…]}]}.
type ReassignmentPlan struct {
	Version    int                 `json:"version"`
	Partitions []PartitionReplicas `json:"partitions"`
}

// ReplicaResult is the outcome of a reassignment or election for one
// partition (Err nil: done).
type ReplicaResult struct {
	Topic     string
	Partition int32
	Err       error
}

// Reassignment is a reassignment in progress.
type Reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding_replicas"`
	Removing  []int32 `json:"removing_replicas"`
}

// AlterPartitionReassignments starts (or, for nil replicas, cancels) the
// reassignment of each partition; results are in request order.
func (c *Client) AlterPartitionReassignments(ctx context.Context, targets []PartitionReplicas) ([]ReplicaResult, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	byTopic := map[string]int{}
	for _, tp := range targets {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = tp.Partition, tp.Replicas
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := request[*kmsg.AlterPartitionAssignmentsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	got := map[string]error{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			name := fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)
			got[name] = codeError("partition "+name, rp.ErrorCode, rp.ErrorMessage)
		}
	}
	out := make([]ReplicaResult, 0, len(targets))
	for _, tp := range targets {
		out = append(out, ReplicaResult{Topic: tp.Topic, Partition: tp.Partition, Err: got[tp.Name()]})
	}
	return out, nil
}

// ListPartitionReassignments lists the reassignments in progress of the
// named partitions (nil: every partition of every topic), sorted.
func (c *Client) ListPartitionReassignments(ctx context.Context, partitions []PartitionReplicas) ([]Reassignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	if partitions != nil {
		req.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
		for _, tp := range groupByTopic(partitions) {
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic, rt.Partitions = tp.topic, tp.partitions
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := request[*kmsg.ListPartitionReassignmentsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []Reassignment
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, Reassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas, Adding: rp.AddingReplicas, Removing: rp.RemovingReplicas})
		}
	}
	slices.SortFunc(out, func(a, b Reassignment) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// CurrentAssignment is the replicas of every partition of the named
// topics, sorted, as --generate and --execute print them for rollback.
func (c *Client) CurrentAssignment(ctx context.Context, topics ...string) ([]PartitionReplicas, error) {
	ds, err := c.DescribeTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var out []PartitionReplicas
	for _, d := range ds {
		if d.Err != nil {
			return nil, d.Err
		}
		for _, p := range d.Partitions {
			out = append(out, PartitionReplicas{Topic: d.Name, Partition: p.Partition, Replicas: p.Replicas, LogDirs: anyDirs(len(p.Replicas))})
		}
	}
	return out, nil
}

// anyDirs is the log_dirs Kafka's tool writes when no directory is asked
// for: "any" for each replica.
func anyDirs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "any"
	}
	return out
}

// GenerateReassignment proposes new replicas for the partitions of
// current on brokers (with their racks), keeping each topic's replication
// factor, with Kafka's assignment algorithm (leaders round-robin from a
// random broker, followers shifted, racks alternated): what
// kafka-reassign-partitions.sh --generate prints.
func GenerateReassignment(current []PartitionReplicas, brokers []BrokerInfo) ([]PartitionReplicas, error) {
	pool := map[int32]*meta.Broker{}
	for _, b := range brokers {
		pool[b.NodeID] = &meta.Broker{ID: b.NodeID, Rack: b.Rack}
	}
	byTopic := map[string][]PartitionReplicas{}
	var names []string
	for _, p := range current {
		if byTopic[p.Topic] == nil {
			names = append(names, p.Topic)
		}
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	slices.Sort(names)
	var out []PartitionReplicas
	for _, name := range names {
		parts := byTopic[name]
		slices.SortFunc(parts, func(a, b PartitionReplicas) int { return int(a.Partition - b.Partition) })
		rf := len(parts[0].Replicas)
		if rf > len(pool) {
			return nil, clientError("topic "+name, "Replication factor: %d larger than available brokers: %d.", rf, len(pool))
		}
		count := parts[len(parts)-1].Partition + 1
		placed := controller.Place(pool, count, rf, 0, rand.IntN(len(pool)), rand.IntN(len(pool)))
		for _, p := range parts {
			replicas := placed[p.Partition]
			out = append(out, PartitionReplicas{Topic: name, Partition: p.Partition, Replicas: replicas, LogDirs: anyDirs(len(replicas))})
		}
	}
	return out, nil
}

// ElectLeaders runs a preferred (unclean false) or unclean election of the
// named partitions, or of every partition when partitions is nil (the
// broker then answers only for the partitions that needed one). Results
// are sorted; a partition whose election was not needed has an Err that
// is kerr.ElectionNotNeeded.
func (c *Client) ElectLeaders(ctx context.Context, unclean bool, partitions []PartitionReplicas) ([]ReplicaResult, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	if unclean {
		req.ElectionType = 1
	}
	if partitions != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, tp := range groupByTopic(partitions) {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = tp.topic, tp.partitions
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := request[*kmsg.ElectLeadersResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	var out []ReplicaResult
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			name := fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)
			out = append(out, ReplicaResult{Topic: rt.Topic, Partition: rp.Partition, Err: codeError("partition "+name, rp.ErrorCode, rp.ErrorMessage)})
		}
	}
	slices.SortFunc(out, func(a, b ReplicaResult) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// topicPartitions is one topic's partitions of a request.
type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic groups partitions by topic, topics in the order they first
// appear, as the partition lists of ListPartitionReassignments and
// ElectLeaders are sent.
func groupByTopic(partitions []PartitionReplicas) []topicPartitions {
	var out []topicPartitions
	index := map[string]int{}
	for _, tp := range partitions {
		i, ok := index[tp.Topic]
		if !ok {
			i = len(out)
			index[tp.Topic] = i
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		out[i].partitions = append(out[i].partitions, tp.Partition)
	}
	return out
}
