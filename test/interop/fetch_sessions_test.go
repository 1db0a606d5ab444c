package interop

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// Fetch sessions (KIP-227) with real consumers of 200 partitions: franz-go
// keeps one session per broker and sends incremental fetches, which the
// broker counts; librdkafka sends sessionless fetches (it has no KIP-227),
// which must work as before. Either way every record arrives exactly once.

const sessionPartitions = 200

func sessionsBroker(t *testing.T) *broker.Broker {
	t.Helper()
	return brokertest.Start(t, testProps(t.TempDir(), map[string]string{"metrics.listener": "127.0.0.1:0"}))
}

// scrapeCounter reads one unlabelled series of b's /metrics.
func scrapeCounter(t *testing.T, b *broker.Broker, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(testkit.ScrapeMetrics(t, b.MetricsAddr()))
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// produceRound writes one record "<round>-<partition>" to each partition p
// with p % every == offset, and returns how many it wrote.
func produceRound(t *testing.T, cl *kgo.Client, topic string, round, every, offset int) int {
	t.Helper()
	var recs []*kgo.Record
	for p := range sessionPartitions {
		if p%every == offset {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d", round, p)})
		}
	}
	if err := cl.ProduceSync(testkit.Context(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// franz-go consumes 200 partitions while records keep arriving in a few of
// them at a time: after the first fetch its fetches are incremental, and no
// record is lost or repeated.
func TestFranzGoReusesItsFetchSessionOver200Partitions(t *testing.T) {
	b := sessionsBroker(t)
	const topic = "sessions-franz"
	testkit.CreateTopic(t, newAdmin(t, b.Addr()), topic, sessionPartitions, nil)
	producer := testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceRound(t, producer, topic, 0, 1, 0) // one record everywhere

	consumer := testkit.Client(t, b.Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	seen := map[string]int{}
	got := 0
	poll := func(until int) {
		t.Helper()
		ctx := testkit.Context(t, 30*time.Second)
		for got < until {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", got, until, err)
			}
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("fetch %s[%d]: %v", errs[0].Topic, errs[0].Partition, errs[0].Err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)]++
				got++
			})
		}
	}
	poll(want)
	// Then a little new data in a tenth of the partitions at a time, each
	// round fetched before the next is written.
	for round := 1; round <= 10; round++ {
		want += produceRound(t, producer, topic, round, 10, round%10)
		poll(want)
	}
	time.Sleep(time.Second) // a repeated record would arrive by now
	if fs := consumer.PollRecords(testkit.Context(t, time.Second), 0); len(fs.Records()) > 0 {
		t.Fatalf("%d records beyond the %d produced, first %q", len(fs.Records()), want, fs.Records()[0].Value)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s consumed %d times", v, n)
		}
	}
	if len(seen) != want {
		t.Errorf("%d distinct records consumed, want %d", len(seen), want)
	}
	n := scrapeCounter(t, b, "kbroker_fetch_session_incremental_fetches_total")
	t.Logf("%d records over %d partitions in %v incremental fetches", want, sessionPartitions, n)
	if n < 10 {
		t.Errorf("%v incremental fetches over 11 rounds of new data: franz-go did not reuse its session", n)
	}
	if n := scrapeCounter(t, b, "kbroker_fetch_session_partitions"); n != sessionPartitions {
		t.Errorf("kbroker_fetch_session_partitions %v, want %d (one session of every partition)", n, sessionPartitions)
	}
}

// librdkafka (confluent-kafka) reads 200 partitions from a broker that
// offers sessions; it asks for none, and gets every record once.
func TestLibrdkafkaConsumes200PartitionsAlongsideSessions(t *testing.T) {
	py := pythonWith(t, "confluent_kafka", "python3-confluent-kafka")
	b := sessionsBroker(t)
	const topic = "sessions-librdkafka"
	testkit.CreateTopic(t, newAdmin(t, b.Addr()), topic, sessionPartitions, nil)
	var res struct{ Values []int }
	runPython(t, py, "confluent.py", &res, "roundtrip", b.Addr(), topic, "2000")
	wantValues(t, "confluent-kafka over 200 partitions", res.Values, 0, 2000)
	t.Logf("after librdkafka: %v fetch sessions, %v incremental fetches",
		scrapeCounter(t, b, "kbroker_fetch_sessions"), scrapeCounter(t, b, "kbroker_fetch_session_incremental_fetches_total"))
}
