package api

// Fetch sessions (KIP-227) around the Fetch handler: the request's
// partitions go into internal/fetchsession, which says which partitions to
// read (for an incremental fetch: every partition of the session, with the
// offsets and limits it remembers), and, once read, which ones the answer
// must carry. The handler reads and long-polls as for any fetch; this file
// only translates between kmsg and the session cache.

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/fetchsession"
	"kbroker/internal/meta"
	"kbroker/internal/metrics"
	"kbroker/internal/replica"
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
// session's partitions for an incremental one, built in the scratch an
// incremental fetch also returns (nil for others), which the handler
// releases once its answer no longer needs it.
func (s *Server) beginFetchSession(req *kmsg.FetchRequest, follower bool) (*fetchsession.Fetch, *kmsg.FetchRequest, *fetchScratch) {
	// Sessionless (librdkafka's every fetch): nothing to look up or close.
	if req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == fetchsession.FinalEpoch) {
		return nil, req, nil
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
		return f, req, nil
	}
	sc := getFetchScratch()
	sc.slots = f.Slots()
	read := *req
	read.Topics = sc.sessionTopics(f.Partitions())
	return f, &read, sc
}

// sessionPartition is one partition of a session as its reads need it:
// its log and leader state, as Lead found them in snap.
type sessionPartition struct {
	snap *meta.Snapshot
	pt   replica.Partition
}

// sessionPartition is partition of t for an incremental fetch: the one its
// session slot keeps while it is current (the metadata snapshot it was
// found in is still the broker's, and its log is open), else looked up
// again and kept. An idle partition then costs a fetch a few loads rather
// than the topic's, the leader's and the log's lookups.
func (s *Server) sessionPartition(slot *fetchsession.Slot, snap *meta.Snapshot, t *meta.Topic, partition int32) (*replica.Partition, error) {
	if kept, _ := slot.Load().(*sessionPartition); kept != nil && kept.snap == snap && !kept.pt.Closing() {
		return &kept.pt, nil
	}
	pt, err := s.resolveIn(snap, t, partition)
	if err != nil {
		return nil, err
	}
	kept := &sessionPartition{snap: snap, pt: pt}
	slot.Store(kept)
	return &kept.pt, nil
}

// fetchScratch holds the arrays an incremental fetch builds and drops on
// every request: the session's partitions as request topics, the answer
// for each partition read (of which only the changed ones are sent), the
// results the session is told, the partitions to watch. Reused across
// fetches (a pool), so that an idle session of thousands of partitions
// costs its fetches no allocation in proportion.
type fetchScratch struct {
	topics     []kmsg.FetchRequestTopic
	parts      []kmsg.FetchRequestTopicPartition
	respTopics []kmsg.FetchResponseTopic
	respParts  []kmsg.FetchResponseTopicPartition
	results    []fetchsession.Result
	keys       []replica.Key
	slots      []*fetchsession.Slot // the session's, not the scratch's
}

var fetchScratchPool = sync.Pool{New: func() any { return new(fetchScratch) }}

func getFetchScratch() *fetchScratch { return fetchScratchPool.Get().(*fetchScratch) }

// release returns sc to the pool, holding nothing of the fetch (records,
// topics, a session's slots): nil-safe.
func (sc *fetchScratch) release() {
	if sc == nil {
		return
	}
	// The records read are the connection's now (it returns them to their
	// pool once sent): the scratch keeps no reference to them.
	for i := range sc.respParts {
		p := &sc.respParts[i]
		p.RecordBatches, p.AbortedTransactions = nil, nil
	}
	sc.slots = nil
	fetchScratchPool.Put(sc)
}

// answer is room for the answer of n partitions over topics topics.
func (sc *fetchScratch) answer(topics, n int) ([]kmsg.FetchResponseTopic, []kmsg.FetchResponseTopicPartition) {
	sc.respTopics = slices.Grow(sc.respTopics[:0], topics)
	sc.respParts = slices.Grow(sc.respParts[:0], n)[:n]
	return sc.respTopics, sc.respParts
}

// sessionTopics groups a session's partitions back into request topics,
// keeping their order (consecutive partitions of one topic share an entry).
func (sc *fetchScratch) sessionTopics(parts []fetchsession.Request) []kmsg.FetchRequestTopic {
	topics := sc.topics[:0]
	// One backing array for every topic's partitions: each topic's slice is
	// a window of it, capped so that appends never spill into the next.
	all := slices.Grow(sc.parts[:0], len(parts))[:len(parts)]
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
		*rp = kmsg.FetchRequestTopicPartition{}
		rp.Default()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.Partition, p.FetchOffset, p.LogStartOffset, p.MaxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
	}
	if n := len(topics); n > 0 {
		topics[n-1].Partitions = all[start:len(parts):len(parts)]
	}
	sc.topics, sc.parts = topics, all
	return topics
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

// fetchSessionError is the answer to a fetch whose session was refused:
// the error at the top and no partitions, as Kafka's SessionErrorContext.
func fetchSessionError(req *kmsg.FetchRequest, f *fetchsession.Fetch) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = f.ErrorCode
	return resp
}

// finishFetchSession tells the session what was read and keeps, in resp,
// only the partitions the answer must carry (all of them for a full fetch),
// with the session id the client is to use next. An incremental fetch's
// answer was built in sc: what is sent is copied out of it.
func finishFetchSession(f *fetchsession.Fetch, r *wire.Request, resp *kmsg.FetchResponse, sc *fetchScratch) {
	if f == nil {
		return
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	var results []fetchsession.Result
	if sc != nil {
		results = slices.Grow(sc.results[:0], n)
	} else {
		results = make([]fetchsession.Result, 0, n)
	}
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for i := range t.Partitions {
			results = append(results, fetchResult(r, t, &t.Partitions[i]))
		}
	}
	include := f.Finish(results, time.Now())
	if sc != nil {
		sc.results = results
	}
	resp.SessionID = f.SessionID
	if !f.Incremental {
		return
	}
	// What is sent is copied out of the answer read (the scratch's arrays,
	// which go back to the pool) into arrays of its own.
	sent, sentTopics, i := 0, 0, 0
	for _, t := range resp.Topics {
		before := sent
		for range t.Partitions {
			if include[i] {
				sent++
			}
			i++
		}
		if sent > before {
			sentTopics++
		}
	}
	topics := make([]kmsg.FetchResponseTopic, 0, sentTopics)
	parts := make([]kmsg.FetchResponseTopicPartition, 0, sent)
	i = 0
	for _, t := range resp.Topics {
		start := len(parts)
		for j := range t.Partitions {
			if include[i] {
				parts = append(parts, t.Partitions[j])
			}
			i++
		}
		if len(parts) > start {
			t.Partitions = parts[start:len(parts):len(parts)]
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
