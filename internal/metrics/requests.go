package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestMetrics are the per-API request series. Besides the total time
// (kbroker_request_duration_seconds), the time of a request is split as
// Kafka's RequestMetrics split it, so that a Fetch long poll waiting for
// records (Kafka's remote time, spent in purgatory) does not read as a slow
// broker: queue (read, waiting to be handled), handler (the handler at
// work) and parked (the handler waiting: a long poll, an acks=all wait).
type requestMetrics struct {
	count   *prometheus.CounterVec   // api, version
	total   *prometheus.HistogramVec // api
	queue   *prometheus.HistogramVec // api
	handler *prometheus.HistogramVec // api
	parked  *prometheus.HistogramVec // api
}

func newRequestMetrics() requestMetrics {
	buckets := prometheus.ExponentialBuckets(50e-6, 2.5, 14)
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"api"})
	}
	return requestMetrics{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_requests_total", Help: "Requests handled, by API and version.",
		}, []string{"api", "version"}),
		total: histogram("kbroker_request_duration_seconds",
			"Time from a request being read to its response being written, by API."),
		queue: histogram("kbroker_request_queue_seconds",
			"Time from a request being read to its handler starting, by API (Kafka's RequestQueueTimeMs)."),
		handler: histogram("kbroker_request_handler_seconds",
			"Time the handler worked on a request, its parked time excluded, by API (Kafka's LocalTimeMs)."),
		parked: histogram("kbroker_request_parked_seconds",
			"Time the handler waited rather than worked: a Fetch long poll, a Produce waiting for its acks, by API (Kafka's RemoteTimeMs)."),
	}
}

func (r requestMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.count, r.total, r.queue, r.handler, r.parked}
}

// RequestTimer holds one API's request series, resolved once so the
// request path does no label lookups.
type RequestTimer struct {
	count                         [32]prometheus.Counter // by version
	total, queue, handler, parked prometheus.Observer
}

// ForAPI resolves the per-version counters and the time observers of key.
func (m *Broker) ForAPI(key int16, maxVersion int16) *RequestTimer {
	name := kmsg.NameForKey(key)
	r := m.requests
	t := &RequestTimer{
		total:   r.total.WithLabelValues(name),
		queue:   r.queue.WithLabelValues(name),
		handler: r.handler.WithLabelValues(name),
		parked:  r.parked.WithLabelValues(name),
	}
	for v := int16(0); v <= maxVersion && int(v) < len(t.count); v++ {
		t.count[v] = r.count.WithLabelValues(name, strconv.Itoa(int(v)))
	}
	return t
}

// RequestTimes is where one request's time went.
type RequestTimes struct {
	Total   time.Duration // read to response written
	Queue   time.Duration // read to handler start
	Handler time.Duration // the handler's own time, Parked excluded
	Parked  time.Duration // the handler waiting (long poll, acks)
	// Split tells whether Queue, Handler and Parked were measured: a
	// request answered without a handler (a raw SASL token) has only a
	// total.
	Split bool
}

// Observe counts one request of version v and records its times.
func (t *RequestTimer) Observe(v int16, times RequestTimes) {
	if v >= 0 && int(v) < len(t.count) && t.count[v] != nil {
		t.count[v].Inc()
	}
	t.total.Observe(times.Total.Seconds())
	if times.Split {
		t.queue.Observe(times.Queue.Seconds())
		t.handler.Observe(times.Handler.Seconds())
		t.parked.Observe(times.Parked.Seconds())
	}
}
