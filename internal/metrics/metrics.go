// Package metrics defines kbroker's Prometheus metrics in one place, so that
// their names and labels stay consistent, and serves them over HTTP.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker holds one broker's collectors. Each broker has its own registry, so
// several brokers in one process (tests) never collide.
type Broker struct {
	Registry *prometheus.Registry

	Requests        *prometheus.CounterVec   // api, version
	RequestLatency  *prometheus.HistogramVec // api
	OpenConnections *prometheus.GaugeVec     // listener
	BytesIn         *prometheus.CounterVec   // topic: record bytes produced
	BytesOut        *prometheus.CounterVec   // topic: record bytes fetched
}

// New creates and registers the broker's collectors, plus Go runtime and
// process metrics.
func New() *Broker {
	m := &Broker{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_requests_total", Help: "Requests handled, by API and version.",
		}, []string{"api", "version"}),
		RequestLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kbroker_request_duration_seconds",
			Help:    "Time from a request being read to its response being written, by API.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2.5, 14),
		}, []string{"api"}),
		OpenConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kbroker_open_connections", Help: "Client connections currently open, by listener.",
		}, []string{"listener"}),
		BytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_topic_bytes_in_total", Help: "Record batch bytes appended, by topic.",
		}, []string{"topic"}),
		BytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_topic_bytes_out_total", Help: "Record batch bytes returned by Fetch, by topic.",
		}, []string{"topic"}),
	}
	m.Registry.MustRegister(m.Requests, m.RequestLatency, m.OpenConnections, m.BytesIn, m.BytesOut,
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// liveHeap adds go_gc_heap_live_bytes, the heap the last GC found
// reachable, to the memstats the Go collector exports by default. It is
// the memory the broker really retains: RSS and heap-in-use also hold
// garbage not yet collected, and swing with every GC cycle.
var liveHeap = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}

// ForgetTopic drops the per-topic series of a deleted topic, as Kafka
// removes a topic's metrics when it is deleted: a broker whose clients
// create and delete topics (tests, temporary topics) would otherwise keep
// a series per name it ever saw, in its memory and in every scrape.
func (m *Broker) ForgetTopic(topic string) {
	m.BytesIn.DeleteLabelValues(topic)
	m.BytesOut.DeleteLabelValues(topic)
}

// RequestTimer returns the two observers for one API, resolved once so the
// request path does no label lookups.
type RequestTimer struct {
	count   [32]prometheus.Counter // by version
	latency prometheus.Observer
}

// ForAPI resolves the per-version counters and the latency observer of key.
func (m *Broker) ForAPI(key int16, maxVersion int16) *RequestTimer {
	name := kmsg.NameForKey(key)
	t := &RequestTimer{latency: m.RequestLatency.WithLabelValues(name)}
	for v := int16(0); v <= maxVersion && int(v) < len(t.count); v++ {
		t.count[v] = m.Requests.WithLabelValues(name, strconv.Itoa(int(v)))
	}
	return t
}

// Observe counts one request of version v that took d.
func (t *RequestTimer) Observe(v int16, d time.Duration) {
	if v >= 0 && int(v) < len(t.count) && t.count[v] != nil {
		t.count[v].Inc()
	}
	t.latency.Observe(d.Seconds())
}

// Serve runs the /metrics endpoint on addr until ctx ends. It returns once
// the listener is bound, with the bound address.
func (m *Broker) Serve(ctx context.Context, addr string, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	// Profiles for "measure before optimising"; the endpoint is meant for a
	// loopback or operator-only address, like the metrics themselves.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return ln.Addr(), nil
}
