package broker_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// logBuffer collects a broker's log lines, safe for its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lines are the log lines containing every one of subs.
func (l *logBuffer) lines(subs ...string) []string {
	var out []string
next:
	for _, line := range strings.Split(l.String(), "\n") {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

func (l *logBuffer) option() broker.Option {
	return broker.WithLogger(slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

func TestStartupLineNamesListenersAndMetricsAndShutdownEndsWithStopped(t *testing.T) {
	var logs logBuffer
	b, err := broker.New(config.Properties{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
		"advertised.listeners":           "PLAINTEXT://localhost:0,OTHER://other.example:19093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
		"log.dirs":                       t.TempDir(),
		"metrics.listener":               "127.0.0.1:0",
	}, logs.option())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	started := logs.lines("kbroker started")
	if len(started) != 1 {
		t.Fatalf("want one startup line, got %q", started)
	}
	addrs := b.Addrs()
	port := addrs[0][strings.LastIndex(addrs[0], ":")+1:]
	for _, want := range []string{
		"version=", "revision=",
		"listeners=\"[PLAINTEXT://" + addrs[0] + " OTHER://" + addrs[1] + "]\"",
		"advertised.listeners=\"[PLAINTEXT://localhost:" + port + " OTHER://other.example:19093]\"",
		"metrics=http://" + b.MetricsAddr() + "/metrics",
	} {
		if !strings.Contains(started[0], want) {
			t.Errorf("startup line lacks %s:\n%s", want, started[0])
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "kbroker stopped") {
		t.Fatalf("the last log line is not the stopped line: %s", last)
	}
}

func TestSecondBrokerOnTheSameLogDirsFailsAtOnce(t *testing.T) {
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	first := brokertest.StartWith(t, props)
	second, err := broker.New(props)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = second.Start()
	took := time.Since(start)
	second.Close()
	if err == nil {
		t.Fatal("a second broker started on log.dirs the first one uses")
	}
	for _, want := range []string{"log.dirs", "log directory " + props["log.dirs"], "is in use by another process"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 2*time.Second {
		t.Errorf("the second broker took %v to fail, want at once", took)
	}
	// The first one is untouched, and once it stops the directory is free.
	cl := testkit.Client(t, first.Addr(), kgo.AllowAutoTopicCreation())
	ctx := testkit.Context(t, 20*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "still", Value: []byte("up")}).FirstErr(); err != nil {
		t.Fatalf("the first broker after the second failed: %v", err)
	}
	cl.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	brokertest.StartWith(t, props)
}

func TestRestartAfterACrashLogsWhatRecoveryDid(t *testing.T) {
	dir := t.TempDir()
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := brokertest.StartWith(t, props)
	cl := testkit.Client(t, b.Addr())
	ctx := testkit.Context(t, 20*time.Second)
	testkit.CreateTopic(t, kadm.NewClient(cl), "crashed", 1, nil)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "crashed", Value: []byte("acked")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// What a kill -9 in the middle of an append leaves: no clean-shutdown
	// marker and a torn batch at the end of the segment.
	if err := os.Remove(filepath.Join(dir, "crashed-0", ".kbroker_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	torn := []byte("\x00\x00\x00\x00\x00\x00\x00\x01torn")
	f, err := os.OpenFile(filepath.Join(dir, "crashed-0", "00000000000000000000.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()

	var logs logBuffer
	brokertest.StartWith(t, props, logs.option())
	got := logs.lines("recovered partition logs after an unclean shutdown")
	if len(got) != 1 {
		t.Fatalf("want one recovery line at startup, got %q", got)
	}
	for _, want := range []string{"partitions=1", "segments_scanned=1", "bytes_truncated=" + strconv.Itoa(len(torn)), "took="} {
		if !strings.Contains(got[0], want) {
			t.Errorf("recovery line lacks %s: %s", want, got[0])
		}
	}
}

func TestRepeatedLinesFromOneMisbehavingClientAreRateLimited(t *testing.T) {
	var logs logBuffer
	b := brokertest.Start(t, nil, logs.option())
	// A client asking again and again for an API the broker does not
	// serve, on a new connection each time, as a client retrying does.
	const attempts = 20
	for i := 0; i < attempts; i++ {
		c := testkit.Dial(t, b.Addr())
		c.WriteFrame(testkit.Header(int16(kmsg.LeaderAndISR), 0, 1, false))
		c.ExpectClosed(5 * time.Second)
		c.Conn.Close()
	}
	want := fmt.Sprintf("%s (key %d) is not served", kmsg.LeaderAndISR.Name(), kmsg.LeaderAndISR)
	if got := logs.lines("closing connection", want); len(got) != 1 {
		t.Fatalf("%d connections refused for the same reason logged %d lines, want 1:\n%s", attempts, len(got), strings.Join(got, "\n"))
	}
}

func TestOperatorMetricsAppearAfterRealTraffic(t *testing.T) {
	const pass = "alice-secret"
	b := brokertest.Start(t, config.Properties{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="` + pass + `";`,
		"metrics.listener": "127.0.0.1:0",
	})
	ctx := testkit.Context(t, 30*time.Second)
	cl := testkit.Client(t, b.Addr())
	adm := kadm.NewClient(cl)
	testkit.CreateTopic(t, adm, "ops", 1, nil)
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ops", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A Metadata request for a topic that does not exist: an error code in
	// the response, not a failed request.
	meta := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("nope")
	meta.Topics = append(meta.Topics, topic)
	if _, err := meta.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	// A Fetch at the log end parks for its MaxWaitMillis.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	details, err := adm.ListTopics(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	ft.Topic, ft.TopicID = "ops", details["ops"].ID // Fetch v13+ names topics by id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 3, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if _, err := fetch.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	// A SASL login with the wrong password.
	bad := testkit.Client(t, b.Addrs()[1], kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()))
	if err := bad.Ping(ctx); err == nil {
		t.Fatal("a wrong password was accepted")
	}

	// A request's times are observed once its answer is written, so the
	// client may read the answer first: scrape until the Fetch is in.
	var text string
	testkit.WaitFor(5*time.Second, func() bool {
		text = testkit.ScrapeMetrics(t, b.MetricsAddr())
		return strings.Contains(text, `kbroker_request_parked_seconds_count{api="Fetch"} 1`)
	})
	for _, want := range []string{
		`kbroker_build_info{goversion="` + runtime.Version() + `",revision="`,
		`kbroker_request_errors_total{api="Metadata",error="UNKNOWN_TOPIC_OR_PARTITION"} 1`,
		`kbroker_authentications_total{listener="SASL_PLAINTEXT",mechanism="PLAIN",result="failure"} 1`,
		`kbroker_log_end_offset{partition="0",topic="ops"} 3`,
		`kbroker_log_start_offset{partition="0",topic="ops"} 0`,
		`kbroker_request_queue_seconds_count{api="Produce"} 3`,
		`kbroker_request_handler_seconds_count{api="Produce"} 3`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if size := metricValue(t, text, `kbroker_log_size_bytes{partition="0",topic="ops"}`); size <= 0 {
		t.Errorf("log size of ops-0 = %v, want the bytes of its three batches", size)
	}
	// The long poll's wait is parked time, not handler time.
	parked := metricValue(t, text, `kbroker_request_parked_seconds_sum{api="Fetch"}`)
	handler := metricValue(t, text, `kbroker_request_handler_seconds_sum{api="Fetch"}`)
	if parked < 0.25 || handler > parked/2 {
		t.Errorf("Fetch parked %.3fs and handled %.3fs; want the 300 ms wait counted as parked", parked, handler)
	}

	if _, err := adm.DeleteTopic(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if text := testkit.ScrapeMetrics(t, b.MetricsAddr()); strings.Contains(text, `topic="ops"`) {
		t.Errorf("/metrics still has series of the deleted topic ops:\n%s", grepLines(text, `topic="ops"`))
	}
}

// metricValue is the value of the series named exactly series in text.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("/metrics lacks %s", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
