package api

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
)

// The spliced DescribeConfigs encoding must be byte for byte what kmsg
// writes for the same response built as structs, in every version and with
// every option, around resources built by the handler (errors, brokers).
func TestDescribeConfigsSplicedEncodingIsKmsgEncoding(t *testing.T) {
	layers := config.Layers{
		ClusterDefault: map[string]string{"log.retention.ms": "7200000"},
		Static:         config.Properties{"log.retention.hours": "5", "compression.type": "zstd"},
	}
	base := dynconfig.ResolveTopicBase(layers)
	overrides := []map[string]string{
		nil,
		{"retention.ms": "60000", "cleanup.policy": "compact", "max.message.bytes": "12345"},
		{"zzz.not.a.topic.config": "1", "segment.bytes": "1048576"},
		{base[0].Name: "x", base[len(base)-1].Name: "y"}, // first and last entries
	}
	msg := "Topic authorization failed."
	failed := kmsg.NewDescribeConfigsResponseResource()
	failed.ResourceName, failed.ResourceType = "secret", kmsg.ConfigResourceTypeTopic
	failed.ErrorCode, failed.ErrorMessage = kerr.TopicAuthorizationFailed.Code, &msg

	for version := int16(0); version <= 4; version++ {
		for _, opts := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Version, req.IncludeSynonyms, req.IncludeDocumentation = version, opts[0], opts[1]
			want := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
			want.ThrottleMillis = 17
			got := &describeConfigsResponse{DescribeConfigsResponse: req.ResponseKind().(*kmsg.DescribeConfigsResponse)}
			got.ThrottleMillis = 17
			got.topics = newTopicConfigRenderer(req, base)
			for i, o := range overrides {
				res := kmsg.NewDescribeConfigsResponseResource()
				res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, fmt.Sprintf("topic-%d", i)
				for _, e := range base {
					if v, ok := o[e.Name]; ok {
						e.Entry = config.WithTopicOverride(e.Entry, v)
					}
					res.Configs = append(res.Configs, describedConfig(req, e))
				}
				want.Resources = append(want.Resources, res)
				got.resources = append(got.resources, describedResource{topic: res.ResourceName, overrides: o})
				if i == 1 {
					want.Resources = append(want.Resources, failed)
					got.resources = append(got.resources, describedResource{res: &failed})
				}
			}
			if w, g := want.AppendTo(nil), got.AppendTo(nil); !bytes.Equal(w, g) {
				t.Fatalf("v%d synonyms=%v docs=%v: spliced encoding differs (%d bytes, want %d)", version, opts[0], opts[1], len(g), len(w))
			}
			empty := &describeConfigsResponse{DescribeConfigsResponse: req.ResponseKind().(*kmsg.DescribeConfigsResponse)}
			if w, g := req.ResponseKind().AppendTo(nil), empty.AppendTo(nil); !bytes.Equal(w, g) {
				t.Fatalf("v%d: empty response differs", version)
			}
		}
	}
}

// DescribeClientQuotas answered from a listing must be what kmsg writes for
// the same entries built as structs, for every entity and for a subset.
func TestDescribeClientQuotasListingEncodingIsKmsgEncoding(t *testing.T) {
	quotas := map[string]map[string]float64{
		"users/alice":                       {"producer_byte_rate": 1024, "consumer_byte_rate": 2048, "request_percentage": 50},
		"users/<default>":                   {"producer_byte_rate": 1},
		"users/alice/clients/c%2F1":         {"consumer_byte_rate": 4096},
		"users/<default>/clients/<default>": {"controller_mutation_rate": 3},
		"clients/<default>":                 {"request_percentage": 25},
		"ips/127.0.0.1":                     {"connection_creation_rate": 5},
		"ips/<default>":                     {"connection_creation_rate": 7},
		"clients/other-keys":                {"zeta": 1, "alpha": 2, "producer_byte_rate": 3}, // not written by kbroker
		"not/a/path":                        {"producer_byte_rate": 9},
	}
	l := &quotaListing{quotas: quotas}
	l.once.Do(l.parse)
	if len(l.entities) != len(quotas)-1 {
		t.Fatalf("listed %d entities, want %d (the unparsable path left out)", len(l.entities), len(quotas)-1)
	}
	for version := int16(0); version <= 1; version++ {
		for _, subset := range [][]int{nil, {}, {1, 4, 5}} {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Version = version
			want := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
			want.ThrottleMillis = 3
			want.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
			got := &describeClientQuotasResponse{DescribeClientQuotasResponse: req.ResponseKind().(*kmsg.DescribeClientQuotasResponse), listing: l, all: subset == nil, matched: subset}
			got.ThrottleMillis = 3
			got.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
			for i, q := range l.entities {
				if subset != nil && !slices.Contains(subset, i) {
					continue
				}
				entry := kmsg.NewDescribeClientQuotasResponseEntry()
				for _, c := range q.entity.AppendComponents(nil) {
					re := kmsg.NewDescribeClientQuotasResponseEntryEntity()
					re.Type, re.Name = c.Type, c.Name
					entry.Entity = append(entry.Entity, re)
				}
				values := quotas[q.entity.Path()]
				for _, k := range slices.Sorted(maps.Keys(values)) {
					v := kmsg.NewDescribeClientQuotasResponseEntryValue()
					v.Key, v.Value = k, values[k]
					entry.Values = append(entry.Values, v)
				}
				want.Entries = append(want.Entries, entry)
			}
			if w, g := want.AppendTo(nil), got.AppendTo(nil); !bytes.Equal(w, g) {
				t.Fatalf("v%d subset %v: listing encoding differs (%d bytes, want %d)", version, subset, len(g), len(w))
			}
		}
	}
}
