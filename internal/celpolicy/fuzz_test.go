package celpolicy

import (
	"errors"
	"os"
	"testing"

	"kbroker/policy"
)

// FuzzCompile: any rule file either compiles or fails with a CompileError
// naming a line, never panics; a set that compiles evaluates without
// panicking on a request.
func FuzzCompile(f *testing.F) {
	if data, err := os.ReadFile("testdata/policies.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("- name: a\n  on: alter-configs\n  validate: 'true'\n"))
	f.Add([]byte("rules:\n- name: a\n  on: [create-topic]\n  match: topic.partitions > 1\n  validate: |\n    topic.replication_factor >= 3\n  message: '\"no\"'\n"))
	f.Add([]byte("rules: [\n"))
	f.Add([]byte("rules:\n- name: a\n  on: alter-configs\n  validate: duration(changes['x']) > duration('1d') && bytes('1MiB') > 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Compile("fuzz.yaml", data)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("not a CompileError: %v", err)
			}
			return
		}
		e := New()
		e.Swap(set)
		v := "1"
		e.ValidateAlterConfig(policy.AlterConfigRequest{Resource: policy.ConfigResource{Type: policy.Topic, Name: "t"},
			Configs: map[string]*string{"x": &v, "y": nil}, Resulting: map[string]string{"x": "1"}})
		e.ValidateCreateTopic(policy.CreateTopicRequest{Topic: "t", Assignments: map[int32][]int32{0: {1}}})
		e.ValidateCreatePartitions(policy.CreatePartitionsRequest{Topic: "t", NewPartitions: 2})
		e.ValidateAlterClientQuotas(policy.ClientQuotaRequest{Entity: map[string]string{"user": "<default>"}})
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"7d", "1h30m", "-5ms", "99999999999w", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseDuration(s)
		ParseBytes(s)
	})
}
