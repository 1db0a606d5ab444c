package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestErrorCodesAreCountedAtEveryDepthOfAResponse(t *testing.T) {
	m := New()
	resp := kmsg.NewPtrProduceResponse()
	topic := kmsg.NewProduceResponseTopic()
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code} {
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = code
		topic.Partitions = append(topic.Partitions, p)
	}
	resp.Topics = append(resp.Topics, topic)
	m.CountErrors(int16(kmsg.Produce), resp)

	apiVersions := kmsg.NewPtrApiVersionsResponse()
	apiVersions.ErrorCode = kerr.UnsupportedVersion.Code
	m.CountErrors(int16(kmsg.ApiVersions), apiVersions)

	for _, c := range []struct {
		api, err string
		want     float64
	}{
		{"Produce", "NOT_LEADER_FOR_PARTITION", 2},
		{"Produce", "MESSAGE_TOO_LARGE", 1},
		{"ApiVersions", "UNSUPPORTED_VERSION", 1},
	} {
		var got dto.Metric
		if err := m.RequestErrors.WithLabelValues(c.api, c.err).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != c.want {
			t.Errorf("errors{api=%s,error=%s} = %v, want %v", c.api, c.err, got.GetCounter().GetValue(), c.want)
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "kbroker_request_errors_total" && len(f.GetMetric()) != 3 {
			t.Errorf("%d error series, want 3 (NONE is not counted)", len(f.GetMetric()))
		}
	}
}

func BenchmarkCountErrorsOfAProduceResponse(b *testing.B) {
	m := New()
	resp := kmsg.NewPtrProduceResponse()
	topic := kmsg.NewProduceResponseTopic()
	topic.Partitions = append(topic.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, topic)
	b.ReportAllocs()
	for b.Loop() {
		m.CountErrors(int16(kmsg.Produce), resp)
	}
}
