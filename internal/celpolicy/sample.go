package celpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"cel.dev/cel-go/common/types"
)

// Sample is a request written by hand to try rules on (kbroker policies
// --check --request): what a rule would see of one resource.
//
//	{"operation": "alter-configs", "principal": "User:alice",
//	 "resource": {"type": "topic", "name": "orders"},
//	 "changes": {"retention.ms": "60000", "cleanup.policy": null},
//	 "expect": "deny"}
//
// configs defaults to the changes that set a value (alter-configs) or is
// the topic's configs (create-topic); a create-topic or create-partitions
// sample names its topic in topic: {"name", "partitions",
// "replication_factor", "current_partitions", "assignments"}.
type Sample struct {
	Operation string `json:"operation"`
	Principal string `json:"principal"`
	Client    string `json:"client"`
	Listener  string `json:"listener"`
	Resource  struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"resource"`
	Changes map[string]any     `json:"changes"`
	Configs map[string]string  `json:"configs"`
	Topic   *SampleTopic       `json:"topic"`
	Entity  map[string]string  `json:"entity"`
	Quotas  map[string]float64 `json:"quotas"`
	// Expect is "allow" or "deny" (or empty): what the sample should get.
	Expect string `json:"expect"`
}

// SampleTopic is the topic of a create-topic or create-partitions sample.
type SampleTopic struct {
	Name              string             `json:"name"`
	Partitions        int64              `json:"partitions"`
	ReplicationFactor int64              `json:"replication_factor"`
	CurrentPartitions int64              `json:"current_partitions"`
	Assignments       map[string][]int64 `json:"assignments"`
}

// ParseSamples reads one sample, a JSON list of them, or JSON lines.
func ParseSamples(data []byte) ([]Sample, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var out []Sample
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("samples: %w", err)
		}
		return out, checkSamples(out)
	}
	var out []Sample
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var s Sample
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("sample %d: %w", len(out)+1, err)
		}
		out = append(out, s)
	}
	return out, checkSamples(out)
}

func checkSamples(samples []Sample) error {
	for i, s := range samples {
		if !slices.Contains(Operations, s.Operation) {
			return fmt.Errorf("sample %d: operation %q is not one of %v", i+1, s.Operation, Operations)
		}
		if s.Expect != "" && s.Expect != "allow" && s.Expect != "deny" {
			return fmt.Errorf("sample %d: expect is allow or deny, not %q", i+1, s.Expect)
		}
	}
	return nil
}

// Vars are the variables the sample gives a rule.
func (s *Sample) Vars() *Vars {
	v := &Vars{Operation: s.Operation, Principal: s.Principal, ClientAddress: s.Client, Listener: s.Listener,
		ResourceType: s.Resource.Type, ResourceName: s.Resource.Name, Configs: s.Configs, Entity: s.Entity, Quotas: s.Quotas}
	if v.Principal == "" {
		v.Principal = "User:ANONYMOUS"
	}
	v.Changes = map[string]any{}
	for k, val := range s.Changes {
		if val == nil {
			v.Changes[k] = types.NullValue
		} else {
			v.Changes[k] = val
		}
	}
	if s.Topic != nil {
		assignments := map[int64][]int64{}
		for p, replicas := range s.Topic.Assignments {
			n, _ := strconv.ParseInt(p, 10, 64)
			assignments[n] = replicas
		}
		v.Topic = map[string]any{"name": s.Topic.Name, "partitions": s.Topic.Partitions,
			"replication_factor": s.Topic.ReplicationFactor, "current_partitions": s.Topic.CurrentPartitions, "assignments": assignments}
		if v.ResourceName == "" {
			v.ResourceName = s.Topic.Name
		}
	}
	switch s.Operation {
	case OpCreateTopic, OpCreatePartitions:
		if v.ResourceType == "" {
			v.ResourceType = "topic"
		}
		if s.Operation == OpCreateTopic && len(s.Changes) == 0 {
			for k, val := range s.Configs {
				v.Changes[k] = val
			}
		}
	case OpAlterConfigs:
		if v.ResourceType == "" {
			v.ResourceType = "topic"
		}
		if v.Configs == nil {
			v.Configs = map[string]string{}
			for k, val := range s.Changes {
				if str, ok := val.(string); ok {
					v.Configs[k] = str
				}
			}
		}
	case OpAlterClientQuotas:
		v.ResourceType, v.ResourceName = "client-quota", EntityName(s.Entity)
	}
	return v
}
