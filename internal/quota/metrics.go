package quota

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Per-entity series carry quota_type (the quota key), user
// and client_id; a label is "" when the sharing level does not include it,
// as Kafka's tags are. Usage is a counter in the quota's own unit (bytes;
// percent-seconds of one thread; partitions), so rate(usage) is directly
// comparable with the limit gauge (that unit per second). Series of idle
// entities are deleted after Options.IdleTTL.
const (
	MetricUsage     = "kbroker_quota_usage_total"
	MetricThrottle  = "kbroker_quota_throttle_seconds_total"
	MetricLimit     = "kbroker_quota_limit"
	MetricThrottled = "kbroker_quota_throttled_requests_total"
)

type metrics struct {
	usage, throttle *prometheus.CounterVec
	limit           *prometheus.GaugeVec
	throttled       [numKeys + 1]prometheus.Counter // by keyID, kConnection last
}

type sensorMetrics struct {
	labels          [3]string
	usage, throttle prometheus.Counter
	limit           prometheus.Gauge
}

var entityLabels = []string{"quota_type", "user", "client_id"}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		usage: register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricUsage,
			Help: "Usage recorded against a quota entity, in the quota's unit: bytes (producer_byte_rate, consumer_byte_rate), percent-seconds of one thread (request_percentage), partitions (controller_mutation_rate).",
		}, entityLabels)),
		throttle: register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricThrottle,
			Help: "Throttle time handed to a quota entity's requests.",
		}, entityLabels)),
		limit: register(r, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricLimit,
			Help: "Current limit of a quota entity, in the quota's unit per second (request_percentage: percent).",
		}, entityLabels)),
	}
	throttled := register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricThrottled,
		Help: "Requests (or connections) given a throttle, by quota type.",
	}, []string{"quota_type"}))
	for k := range numKeys {
		m.throttled[k] = throttled.WithLabelValues(keyNames[k])
	}
	m.throttled[kConnection] = throttled.WithLabelValues(ConnectionCreationRate)
	return m
}

// register registers c, or adopts the collector already registered under
// the same description (several Managers on one registry share series).
func register[T prometheus.Collector](r prometheus.Registerer, c T) T {
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing
			}
		}
	}
	return c
}

func (m *metrics) forSensor(key sensorKey) *sensorMetrics {
	// Label values must be UTF-8; names from the wire need not be.
	l := [3]string{keyNames[key.k], strings.ToValidUTF8(key.user, "\uFFFD"), strings.ToValidUTF8(key.client, "\uFFFD")}
	return &sensorMetrics{
		labels:   l,
		usage:    m.usage.WithLabelValues(l[:]...),
		throttle: m.throttle.WithLabelValues(l[:]...),
		limit:    m.limit.WithLabelValues(l[:]...),
	}
}

func (m *metrics) drop(sm *sensorMetrics) {
	m.usage.DeleteLabelValues(sm.labels[:]...)
	m.throttle.DeleteLabelValues(sm.labels[:]...)
	m.limit.DeleteLabelValues(sm.labels[:]...)
}
