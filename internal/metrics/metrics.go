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
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"kbroker/internal/buildinfo"
)

// Broker holds one broker's collectors. Each broker has its own registry, so
// several brokers in one process (tests) never collide.
type Broker struct {
	Registry *prometheus.Registry

	requests        requestMetrics         // requests.go
	OpenConnections *prometheus.GaugeVec   // listener
	BytesIn         *prometheus.CounterVec // topic: record bytes produced
	BytesOut        *prometheus.CounterVec // topic: record bytes fetched
	RequestErrors   *prometheus.CounterVec // api, error: error codes in responses (errors.go)
	Authentications *prometheus.CounterVec // listener, mechanism, result
	// PolicyRejections counts resources a policy rule rejected, by rule
	// and operation (internal/celpolicy).
	PolicyRejections *prometheus.CounterVec

	errorCounters sync.Map                                // api<<16|code → prometheus.Counter, resolved once
	partitionLogs atomic.Pointer[PartitionLogs]           // partitions.go
	groups        atomic.Pointer[GroupSource]             // groups.go
	txns          atomic.Pointer[func() TxnStats]         // transactions.go
	fetchSessions atomic.Pointer[func() FetchSessions]    // fetch_sessions.go
	replication   atomic.Pointer[func() ReplicationStats] // replication.go
}

// New creates and registers the broker's collectors, plus Go runtime and
// process metrics.
func New() *Broker {
	m := &Broker{
		Registry: prometheus.NewRegistry(),
		requests: newRequestMetrics(),
		OpenConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kbroker_open_connections", Help: "Client connections currently open, by listener.",
		}, []string{"listener"}),
		BytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_topic_bytes_in_total", Help: "Record batch bytes appended, by topic.",
		}, []string{"topic"}),
		BytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_topic_bytes_out_total", Help: "Record batch bytes returned by Fetch, by topic.",
		}, []string{"topic"}),
		RequestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_request_errors_total",
			Help: "Error codes in responses, by API and Kafka error name; a response counts once per error it carries (per partition, per resource).",
		}, []string{"api", "error"}),
		Authentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_authentications_total",
			Help: "SASL authentications and re-authentications, by listener, mechanism and result (success or failure).",
		}, []string{"listener", "mechanism", "result"}),
		PolicyRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_policy_rejections_total",
			Help: "Resources a policy rule rejected (POLICY_VIOLATION), by rule and operation; validate-only requests count too.",
		}, []string{"rule", "operation"}),
	}
	m.Registry.MustRegister(m.requests.collectors()...)
	m.Registry.MustRegister(m.OpenConnections, m.BytesIn, m.BytesOut, m.RequestErrors, m.Authentications, m.PolicyRejections, buildInfo(),
		partitionCollector{&m.partitionLogs}, groupCollector{&m.groups}, txnCollector{&m.txns}, fetchSessionCollector{&m.fetchSessions}, replicationCollector{&m.replication},
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Authenticated counts one SASL authentication of mechanism on listener.
func (m *Broker) Authenticated(listener, mechanism string, ok bool) {
	result := "success"
	if !ok {
		result = "failure"
	}
	m.Authentications.WithLabelValues(listener, mechanism, result).Inc()
}

// buildInfo is kbroker_build_info, always 1, its labels saying which build
// is running: the way Prometheus exporters publish their version.
func buildInfo() prometheus.Collector {
	info := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kbroker_build_info",
		Help: "Always 1; the labels tell the version, commit and Go version of the running broker.",
		ConstLabels: prometheus.Labels{
			"version": info.Version, "revision": info.RevisionLabel(), "goversion": info.GoVersion,
		},
	})
	g.Set(1)
	return g
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
