package api

// Fetch sessions (KIP-227) around the Fetch handler: the request's
// partitions go into internal/fetchsession, which says which partitions to
// read (for an incremental fetch: every partition of the session, with the
// offsets and limits it remembers), and, once read, which ones the answer
// must carry. The handler reads and long-polls as for any fetch; this file
// only translates between kmsg and the session cache.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/fetchsession"
	"kbroker/internal/metrics"
	"kbroker/internal/wire"
)

// fetchSessionSlotsKey sizes the cache; 0 disables sessions (Kafka's key).
const fetchSessionSlotsKey = "max.incremental.fetch.session.cache.slots"

// newFetchSessions is the broker's session cache, sized by
// max.incremental.fetch.session.cache.slots, with its sizes exported at
// scrape time as Kafka's FetchSessionCache metrics.
func newFetchSessions(b *config.Broker, m *metrics.Broker) *fetchsession.Cache {
	slots := 1000
	if b != nil {
		// Validated at startup (an int ≥ 0), so a parse error cannot happen.
		slots, _ = strconv.Atoi(config.BrokerValue(fetchSessionSlotsKey, config.Layers{Static: b.Props}))
	}
	c := fetchsession.NewCache(slots)
	if m != nil {
		m.WatchFetchSessions(func() metrics.FetchSessions {
			st := c.Stats()
			return metrics.FetchSessions{Sessions: st.Sessions, Partitions: st.Partitions, Evictions: st.Evictions, Incremental: st.Incremental}
		})
	}
	return c
}

// beginFetchSession looks up or starts req's session (Fetch v7+; older
// versions have none and get nil). The request it returns lists the
// partitions to read: req itself for a full fetch, a copy holding the
// session's partitions for an incremental one.
func (s *Server) beginFetchSession(req *kmsg.FetchRequest, follower bool) (*fetchsession.Fetch, *kmsg.FetchRequest) {
	// Sessionless (librdkafka's every fetch): nothing to look up or close.
	if req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == fetchsession.FinalEpoch) {
		return nil, req
	}
	byID := req.Version >= 13
	parts := make([]fetchsession.Request, 0, countPartitions(req))
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, fetchsession.Request{
				Key: sessionKey(byID, rt.Topic, rt.TopicID, rp.Partition),
				Params: fetchsession.Params{
					FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset, MaxBytes: rp.PartitionMaxBytes,
					CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch,
				},
			})
		}
	}
	var forgotten []fetchsession.Key
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, sessionKey(byID, ft.Topic, ft.TopicID, p))
		}
	}
	f := s.fetchSessions.Begin(req.Version, req.SessionID, req.SessionEpoch, follower, parts, forgotten, time.Now())
	if !f.Incremental {
		return f, req
	}
	read := *req
	read.Topics = sessionTopics(f.Partitions())
	return f, &read
}

func countPartitions(req *kmsg.FetchRequest) int {
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	return n
}

func sessionKey(byID bool, topic string, id [16]byte, partition int32) fetchsession.Key {
	if byID {
		return fetchsession.Key{TopicID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: topic, Partition: partition}
}

// sessionTopics groups a session's partitions back into request topics,
// keeping their order (consecutive partitions of one topic share an entry).
func sessionTopics(parts []fetchsession.Request) []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	// One backing array for every topic's partitions: each topic's slice is
	// a window of it, capped so that appends never spill into the next.
	all := make([]kmsg.FetchRequestTopicPartition, len(parts))
	start := 0
	for i, p := range parts {
		if n := len(topics); n == 0 || topics[n-1].Topic != p.Topic || topics[n-1].TopicID != p.TopicID {
			if n > 0 {
				topics[n-1].Partitions = all[start:i:i]
			}
			start = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.Topic, p.TopicID
			topics = append(topics, rt)
		}
		rp := &all[i]
		rp.Default()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.Partition, p.FetchOffset, p.LogStartOffset, p.MaxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
	}
	if n := len(topics); n > 0 {
		topics[n-1].Partitions = all[start:len(parts):len(parts)]
	}
	return topics
}

// fetchSessionError is the answer to a fetch whose session was refused:
// the error at the top and no partitions, as Kafka's SessionErrorContext.
func fetchSessionError(req *kmsg.FetchRequest, f *fetchsession.Fetch) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = f.ErrorCode
	return resp
}

// finishFetchSession tells the session what was read and keeps, in resp,
// only the partitions the answer must carry (all of them for a full fetch),
// with the session id the client is to use next.
func finishFetchSession(f *fetchsession.Fetch, r *wire.Request, resp *kmsg.FetchResponse) {
	if f == nil {
		return
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	results := make([]fetchsession.Result, 0, n)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for i := range t.Partitions {
			results = append(results, fetchResult(r, t, &t.Partitions[i]))
		}
	}
	include := f.Finish(results, time.Now())
	resp.SessionID = f.SessionID
	if !f.Incremental {
		return
	}
	i, topics := 0, resp.Topics[:0]
	for _, t := range resp.Topics {
		kept := t.Partitions[:0]
		for _, p := range t.Partitions {
			if include[i] {
				kept = append(kept, p)
			}
			i++
		}
		if len(kept) > 0 {
			t.Partitions = kept
			topics = append(topics, t)
		}
	}
	resp.Topics = topics
}

// fetchResult is what decides whether an incremental answer includes p;
// its records may be in the response or left in a segment file for the
// connection to send (fetchedLen).
func fetchResult(r *wire.Request, t *kmsg.FetchResponseTopic, p *kmsg.FetchResponseTopicPartition) fetchsession.Result {
	return fetchsession.Result{
		ErrorCode: p.ErrorCode, HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
		HasRecords:       fetchedLen(r, t, p) > 0,
		DivergingEpoch:   p.DivergingEpoch.Epoch >= 0,
		PreferredReplica: p.PreferredReadReplica >= 0,
	}
}
