package broker_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	b := brokertest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "t1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r := &kgo.Record{Topic: "t1", Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("t1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 100 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}

func TestMetricsEndpointCountsRequestsAndTopicBytes(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"metrics.listener": "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("m"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 500)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	text := testkit.ScrapeMetrics(t, b.MetricsAddr())
	for _, want := range []string{
		`kbroker_requests_total{api="Produce",version="`,
		`kbroker_requests_total{api="ApiVersions",version="`,
		`kbroker_request_duration_seconds_bucket{api="Metadata"`,
		`kbroker_open_connections{listener="PLAINTEXT"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	re := regexp.MustCompile(`kbroker_topic_bytes_in_total\{topic="m"\} (\d+)`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("/metrics lacks bytes in for topic m")
	}
	if n, _ := strconv.Atoi(m[1]); n < 500 {
		t.Errorf("bytes in for m = %d, want at least the 500-byte record", n)
	}

	// A deleted topic's series go with it, as Kafka removes a topic's
	// metrics: a broker whose clients create and delete topics must not
	// keep a series for every name it ever saw.
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if text := testkit.ScrapeMetrics(t, b.MetricsAddr()); strings.Contains(text, `topic="m"`) {
		t.Errorf("/metrics still has series of the deleted topic m:\n%s", grepLines(text, `topic="m"`))
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
