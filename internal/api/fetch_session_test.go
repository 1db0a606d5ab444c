package api_test

// Fetch sessions (KIP-227) over TCP: raw kmsg Fetch requests of chosen
// versions against a real broker, so every session field is the test's.

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// sessionFetch is a Fetch of version v in session id at epoch, naming
// partitions (partition → fetch offset) of topic by id from v13 on and by
// name before, waiting up to maxWait for one byte.
func sessionFetch(v int16, id, epoch int32, topic kadm.CreateTopicResponse, partitions map[int32]int64, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = v, id, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait.Milliseconds()), 1, 1<<20
	if len(partitions) == 0 {
		return req
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Topic, topic.ID
	if v >= 13 {
		rt.Topic = ""
	}
	keys := make([]int32, 0, len(partitions))
	for p := range partitions {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, partitions[p], 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// forget adds partitions of topic to req's forgotten topics.
func forget(req *kmsg.FetchRequest, topic kadm.CreateTopicResponse, partitions ...int32) *kmsg.FetchRequest {
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.TopicID, ft.Partitions = topic.ID, partitions
	if req.Version < 13 {
		ft.Topic = topic.Topic
	}
	req.ForgottenTopics = append(req.ForgottenTopics, ft)
	return req
}

// answered lists an answer's partitions as partition → high watermark, and
// which of them carry records.
func answered(t *testing.T, resp *kmsg.FetchResponse) (hw map[int32]int64, withRecords []int32) {
	t.Helper()
	hw = map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			hw[p.Partition] = p.HighWatermark
			if len(p.RecordBatches) > 0 {
				withRecords = append(withRecords, p.Partition)
			}
		}
	}
	slices.Sort(withRecords)
	return hw, withRecords
}

func fetchOver(t *testing.T, c *testkit.RawConn, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	return c.RoundTrip(req).(*kmsg.FetchResponse)
}

// sessionBroker starts a broker with a metrics listener and a topic of
// partitions, and returns a producer to it and a raw connection.
func sessionBroker(t *testing.T, props config.Properties, partitions int32) (*broker.Broker, kadm.CreateTopicResponse, *kgo.Client, *testkit.RawConn) {
	t.Helper()
	all := config.Properties{"metrics.listener": "127.0.0.1:0"}
	for k, v := range props {
		all[k] = v
	}
	b := brokertest.Start(t, all)
	_, adm := client(t, b)
	topic, err := adm.CreateTopic(ctx(t), partitions, 1, nil, "t")
	if err != nil {
		t.Fatal(err)
	}
	producer := testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return b, topic, producer, testkit.Dial(t, b.Addr())
}

func produceTo(t *testing.T, producer *kgo.Client, partition int32) {
	t.Helper()
	if err := producer.ProduceSync(ctx(t), &kgo.Record{Topic: "t", Partition: partition, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// metricValue reads one unlabelled series from the broker's /metrics.
func metricValue(t *testing.T, b *broker.Broker, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(testkit.ScrapeMetrics(t, b.MetricsAddr()))
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A full fetch at epoch 0 creates a session; incremental fetches naming no
// partitions then read all of them and answer only those with new records
// or a new high watermark, and their long poll wakes on any of them.
func TestIncrementalFetchAnswersOnlyPartitionsThatChanged(t *testing.T) {
	b, topic, producer, c := sessionBroker(t, nil, 4)
	produceTo(t, producer, 0)

	full := fetchOver(t, c, sessionFetch(16, 0, 0, topic, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}, 0))
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch: error %v, session id %d; want a session", kerr.ErrorForCode(full.ErrorCode), full.SessionID)
	}
	if hw, recs := answered(t, full); len(hw) != 4 || !slices.Equal(recs, []int32{0}) {
		t.Fatalf("full fetch answered %v with records in %v; want all 4, records in [0]", hw, recs)
	}
	id := full.SessionID

	// Partition 0 moves to offset 1: nothing new anywhere, so nothing to say.
	inc := fetchOver(t, c, sessionFetch(16, id, 1, topic, map[int32]int64{0: 1}, 0))
	if inc.ErrorCode != 0 || inc.SessionID != id {
		t.Fatalf("incremental fetch: error %v, session id %d, want %d", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID, id)
	}
	if hw, _ := answered(t, inc); len(hw) != 0 {
		t.Fatalf("incremental fetch with nothing new answered %v", hw)
	}

	produceTo(t, producer, 2)
	inc = fetchOver(t, c, sessionFetch(16, id, 2, topic, nil, 0))
	if hw, recs := answered(t, inc); len(hw) != 1 || hw[2] != 1 || !slices.Equal(recs, []int32{2}) {
		t.Fatalf("after a record to partition 2, incremental fetch answered %v with records in %v", hw, recs)
	}

	// The long poll of an incremental fetch that names nothing waits on the
	// session's partitions.
	poll := sessionFetch(16, id, 3, topic, map[int32]int64{2: 1}, time.Minute)
	corr := c.Send(poll)
	time.Sleep(300 * time.Millisecond) // the fetch is waiting
	produceTo(t, producer, 3)
	// Read fails after testkit.IOTimeout (5 s), well before max_wait_ms: the
	// long poll must wake on the record.
	inc = c.Read(poll, corr).(*kmsg.FetchResponse)
	if hw, recs := answered(t, inc); len(hw) != 1 || !slices.Equal(recs, []int32{3}) {
		t.Fatalf("woken incremental fetch answered %v with records in %v, want only partition 3", hw, recs)
	}

	if n := metricValue(t, b, "kbroker_fetch_sessions"); n != 1 {
		t.Errorf("kbroker_fetch_sessions %v, want 1", n)
	}
	if n := metricValue(t, b, "kbroker_fetch_session_partitions"); n != 4 {
		t.Errorf("kbroker_fetch_session_partitions %v, want 4", n)
	}
	if n := metricValue(t, b, "kbroker_fetch_session_incremental_fetches_total"); n != 3 {
		t.Errorf("kbroker_fetch_session_incremental_fetches_total %v, want 3", n)
	}
}

// Forgotten partitions leave the session: new records there are no longer
// answered. Forgetting the last one closes the session, and the fetch is
// answered without one.
func TestForgottenTopicsLeaveTheFetchSession(t *testing.T) {
	b, topic, producer, c := sessionBroker(t, nil, 2)
	full := fetchOver(t, c, sessionFetch(16, 0, 0, topic, map[int32]int64{0: 0, 1: 0}, 0))
	id := full.SessionID
	if id == 0 {
		t.Fatal("no session")
	}
	inc := fetchOver(t, c, forget(sessionFetch(16, id, 1, topic, nil, 0), topic, 1))
	if inc.ErrorCode != 0 || inc.SessionID != id {
		t.Fatalf("forgetting partition 1: error %v, session %d", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID)
	}
	if n := metricValue(t, b, "kbroker_fetch_session_partitions"); n != 1 {
		t.Errorf("after forgetting one of two partitions, kbroker_fetch_session_partitions %v, want 1", n)
	}
	produceTo(t, producer, 1)
	produceTo(t, producer, 0)
	inc = fetchOver(t, c, sessionFetch(16, id, 2, topic, nil, 0))
	if hw, recs := answered(t, inc); len(hw) != 1 || !slices.Equal(recs, []int32{0}) {
		t.Fatalf("answered %v with records in %v; want only partition 0 (1 was forgotten)", hw, recs)
	}

	last := fetchOver(t, c, forget(sessionFetch(16, id, 3, topic, nil, 0), topic, 0))
	if last.ErrorCode != 0 || last.SessionID != 0 {
		t.Fatalf("forgetting every partition: error %v, session %d; want a sessionless answer", kerr.ErrorForCode(last.ErrorCode), last.SessionID)
	}
	if n := metricValue(t, b, "kbroker_fetch_sessions"); n != 0 {
		t.Errorf("kbroker_fetch_sessions %v after the session emptied, want 0", n)
	}
	if again := fetchOver(t, c, sessionFetch(16, id, 4, topic, nil, 0)); again.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("the closed session answered %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(again.ErrorCode))
	}
}

// Session errors are top-level, with no partitions, as Kafka's
// SessionErrorContext answers.
func TestFetchSessionErrors(t *testing.T) {
	_, topic, _, c := sessionBroker(t, nil, 2)
	byID := fetchOver(t, c, sessionFetch(16, 0, 0, topic, map[int32]int64{0: 0, 1: 0}, 0)).SessionID
	byName := fetchOver(t, c, sessionFetch(12, 0, 0, topic, map[int32]int64{0: 0, 1: 0}, 0)).SessionID
	if byID == 0 || byName == 0 || byID == byName {
		t.Fatalf("session ids %d (v16) and %d (v12): want two sessions", byID, byName)
	}
	if inc := fetchOver(t, c, sessionFetch(12, byName, 1, topic, nil, 0)); inc.ErrorCode != 0 || inc.SessionID != byName {
		t.Fatalf("v12 incremental fetch of a by-name session: error %v, session %d", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID)
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.FetchRequest
		want *kerr.Error
	}{
		{"unknown session id", sessionFetch(16, 12345, 1, topic, nil, 0), kerr.FetchSessionIDNotFound},
		{"epoch ahead", sessionFetch(16, byID, 5, topic, nil, 0), kerr.InvalidFetchSessionEpoch},
		{"by-name session fetched by id (v16)", sessionFetch(16, byName, 2, topic, nil, 0), kerr.FetchSessionTopicIDError},
		{"by-id session fetched by name (v12)", sessionFetch(12, byID, 1, topic, nil, 0), kerr.FetchSessionTopicIDError},
		{"epoch replayed", sessionFetch(12, byName, 1, topic, map[int32]int64{0: 0}, 0), kerr.InvalidFetchSessionEpoch},
	} {
		resp := fetchOver(t, c, tc.req)
		if resp.ErrorCode != tc.want.Code || len(resp.Topics) != 0 || resp.SessionID != 0 {
			t.Errorf("%s: error %v, %d topics, session %d; want %v, none, 0", tc.name, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), resp.SessionID, tc.want)
		}
	}
	// A refused epoch does not move the session on: the right one still works.
	if inc := fetchOver(t, c, sessionFetch(16, byID, 1, topic, nil, 0)); inc.ErrorCode != 0 || inc.SessionID != byID {
		t.Errorf("the right epoch after refused ones: error %v, session %d", kerr.ErrorForCode(inc.ErrorCode), inc.SessionID)
	}
}

// A partition named by a topic id the broker does not know is answered
// UNKNOWN_TOPIC_ID, in the full fetch and, as an error, in every
// incremental one.
func TestFetchSessionAnswersUnknownTopicIDs(t *testing.T) {
	_, topic, _, c := sessionBroker(t, nil, 1)
	unknown := kadm.CreateTopicResponse{Topic: "gone", ID: [16]byte{1, 2, 3}}
	req := sessionFetch(16, 0, 0, topic, map[int32]int64{0: 0}, 0)
	req.Topics = append(req.Topics, sessionFetch(16, 0, 0, unknown, map[int32]int64{0: 0}, 0).Topics...)
	full := fetchOver(t, c, req)
	if full.SessionID == 0 || len(full.Topics) != 2 {
		t.Fatalf("full fetch: session %d, %d topics", full.SessionID, len(full.Topics))
	}
	if got := full.Topics[1]; got.TopicID != unknown.ID || got.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("full fetch answered the unknown topic id %x with %v", got.TopicID, kerr.ErrorForCode(got.Partitions[0].ErrorCode))
	}
	for epoch := int32(1); epoch <= 2; epoch++ {
		inc := fetchOver(t, c, sessionFetch(16, full.SessionID, epoch, topic, nil, 0))
		if len(inc.Topics) != 1 || inc.Topics[0].TopicID != unknown.ID || inc.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("incremental fetch %d answered %+v; want only the unknown topic id, UNKNOWN_TOPIC_ID", epoch, inc.Topics)
		}
	}
}

// With max.incremental.fetch.session.cache.slots=0 no session is created:
// full fetches are answered with session id 0, as Kafka does.
func TestFetchSessionsOffWithZeroSlots(t *testing.T) {
	b, topic, _, c := sessionBroker(t, config.Properties{"max.incremental.fetch.session.cache.slots": "0"}, 2)
	full := fetchOver(t, c, sessionFetch(16, 0, 0, topic, map[int32]int64{0: 0, 1: 0}, 0))
	if full.ErrorCode != 0 || full.SessionID != 0 || len(full.Topics) != 1 || len(full.Topics[0].Partitions) != 2 {
		t.Fatalf("full fetch with no slots: error %v, session %d, %d topics", kerr.ErrorForCode(full.ErrorCode), full.SessionID, len(full.Topics))
	}
	if n := metricValue(t, b, "kbroker_fetch_sessions"); n != 0 {
		t.Errorf("kbroker_fetch_sessions %v, want 0", n)
	}
}

// An incremental fetch keeps each partition's log and leader state from
// one fetch to the next; a topic deleted and created again under its name
// (a by-name session, v12) must be looked up again: first answered
// UNKNOWN_TOPIC_OR_PARTITION, not as the deleted log (nor a storage error
// from it), then read from the new topic's log.
func TestIncrementalFetchFollowsATopicDeletedAndCreatedAgain(t *testing.T) {
	b, topic, producer, c := sessionBroker(t, nil, 2)
	produceTo(t, producer, 0)
	full := fetchOver(t, c, sessionFetch(12, 0, 0, topic, map[int32]int64{0: 0, 1: 0}, 0))
	id := full.SessionID
	if id == 0 {
		t.Fatal("no session")
	}
	// Both partitions are read (and kept); only 0 has records to answer.
	if hw, recs := answered(t, fetchOver(t, c, sessionFetch(12, id, 1, topic, nil, 0))); len(hw) != 1 || !slices.Equal(recs, []int32{0}) {
		t.Fatalf("incremental fetch answered %v with records in %v; want partition 0's record", hw, recs)
	}
	_, adm := client(t, b)
	if _, err := adm.DeleteTopic(ctx(t), "t"); err != nil {
		t.Fatal(err)
	}
	inc := fetchOver(t, c, sessionFetch(12, id, 2, topic, nil, 0))
	if inc.ErrorCode != 0 || len(inc.Topics) != 1 || len(inc.Topics[0].Partitions) != 2 {
		t.Fatalf("after the deletion: error %v, topics %+v; want both partitions, with an error", kerr.ErrorForCode(inc.ErrorCode), inc.Topics)
	}
	for _, p := range inc.Topics[0].Partitions {
		if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("partition %d of the deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if _, err := adm.CreateTopic(ctx(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// A new producer: the first one knows the old topic's id (Produce v13+).
	produceTo(t, testkit.Client(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner())), 1)
	var hw map[int32]int64
	var recs []int32
	for epoch := int32(3); epoch < 5; epoch++ {
		if hw, recs = answered(t, fetchOver(t, c, sessionFetch(12, id, epoch, topic, nil, 0))); len(recs) > 0 {
			break
		}
	}
	if !slices.Equal(recs, []int32{1}) || hw[1] != 1 {
		t.Fatalf("after the topic was created again and partition 1 got a record: answered %v with records in %v; want partition 1 at high watermark 1", hw, recs)
	}
}
