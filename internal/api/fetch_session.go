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
// versions have none and get nil). For an incremental fetch it also
// returns the scratch its read (readSession) builds in, nil for others,
// which the handler releases once its answer no longer needs it.
func (s *Server) beginFetchSession(req *kmsg.FetchRequest, follower bool) (*fetchsession.Fetch, *fetchScratch) {
	// Sessionless (librdkafka's every fetch): nothing to look up or close.
	if req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == fetchsession.FinalEpoch) {
		return nil, nil
	}
	byID := req.Version >= 13
	parts := make([]fetchsession.Request, 0, countPartitions(req))
	for _, rt := range req.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			parts = append(parts, fetchsession.Request{Key: sessionKey(byID, rt.Topic, rt.TopicID, rp.Partition), Params: requestParams(rp)})
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
		return f, nil
	}
	return f, getFetchScratch()
}

// readSession is readFetch for an incremental fetch: it reads every
// partition of the session f (its Partitions, with the parameters the
// session remembers), in one pass that keeps of each only what decides
// whether the answer includes it (sc.results) and, for the few with
// records, their answer (sc.answers): an idle partition costs a fetch a
// few loads and writes no 160-byte response entry. sessionAnswer then
// builds the answer of the partitions the session says to include.
func (s *Server) readSession(c *wire.Conn, r *wire.Request, req *kmsg.FetchRequest, f *fetchsession.Fetch, maxBytes int32, fromReplica, watch bool, sc *fetchScratch) (read []replica.Key, throttled int, done bool) {
	r.RecordFiles = nil // a long poll's earlier read
	snap := s.Store.Snapshot()
	parts, slots := f.Partitions(), f.Slots()
	budget := replica.NewFetchRead(maxBytes, len(parts), watch, req.IsolationLevel == 1)
	if watch {
		budget.WithKeys(sc.keys)
		defer func() { sc.keys = budget.Keys() }()
	}
	sc.dropAnswers() // a long poll's earlier read
	sc.results = slices.Grow(sc.results[:0], len(parts))[:len(parts)]
	sc.reads = slices.Grow(sc.reads[:0], len(parts))[:len(parts)]
	readCommitted := req.IsolationLevel == 1 && !fromReplica
	sendsFiles := c.SendsFiles()
	byID := req.Version >= 13
	var t *meta.Topic
	var topicErr error
	for i := range parts {
		p := &parts[i]
		// Authorization and the topic are the same for every partition of
		// the topic (a session lists a topic's partitions together).
		if i == 0 || p.Topic != parts[i-1].Topic || p.TopicID != parts[i-1].TopicID {
			t, topicErr = s.fetchTopic(c, snap, partitionRef{name: p.Topic, id: p.TopicID, byID: byID}, fromReplica)
		}
		fd := replica.Fetched{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
		err := topicErr
		if err == nil {
			var pt *replica.Partition
			if pt, err = s.sessionPartition(slots[i], snap, t, p.Partition); err == nil {
				fd, err = s.readPartition(r, &budget, pt, req, p.Topic, p.TopicID, p.Partition, p.Params, fromReplica, sendsFiles)
			}
		}
		var code int16
		if err != nil {
			done = true
			code, _ = errorCode(err)
		}
		sc.results[i] = fetchsession.Result{ErrorCode: code, HighWatermark: fd.HighWatermark, LogStartOffset: fd.LogStartOffset, HasRecords: fd.Len() > 0}
		sc.reads[i] = sessionRead{lastStable: fd.LastStableOffset}
		if fd.Len() > 0 || len(fd.AbortedTxns) > 0 {
			sc.answers = append(sc.answers, kmsg.FetchResponseTopicPartition{})
			fillPartition(&sc.answers[len(sc.answers)-1], p.Partition, &fd, code, readCommitted)
			sc.reads[i].answer = int32(len(sc.answers))
		}
	}
	return budget.Keys(), budget.ThrottledBytes(), done || budget.Reached(req.MinBytes)
}

// sessionAnswer tells the session f what readSession found and answers
// with the partitions it must include, in arrays of the answer's own (sc
// goes back to its pool once the handler is done).
func (sc *fetchScratch) sessionAnswer(req *kmsg.FetchRequest, f *fetchsession.Fetch, fromReplica bool) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = f.SessionID
	include := f.Finish(sc.results, time.Now())
	parts := f.Partitions() // still the session's listing: the handler releases it
	sent, sentTopics, last := 0, 0, -1
	for i, in := range include {
		if in {
			if last < 0 || !sameTopic(&parts[i], &parts[last]) {
				sentTopics++
			}
			sent, last = sent+1, i
		}
	}
	if sent == 0 {
		return resp
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, sentTopics)
	answered := make([]kmsg.FetchResponseTopicPartition, 0, sent)
	readCommitted := req.IsolationLevel == 1 && !fromReplica
	last = -1
	for i, in := range include {
		if !in {
			continue
		}
		p := &parts[i]
		if last < 0 || !sameTopic(p, &parts[last]) {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = p.Topic, p.TopicID
			st.Partitions = answered[len(answered):len(answered)]
			resp.Topics = append(resp.Topics, st)
		}
		last = i
		answered = append(answered, kmsg.FetchResponseTopicPartition{})
		sp := &answered[len(answered)-1]
		if a := sc.reads[i].answer; a > 0 {
			*sp = sc.answers[a-1]
		} else {
			// Nothing read: the offsets (and error) say it all.
			res := &sc.results[i]
			fd := replica.Fetched{HighWatermark: res.HighWatermark, LastStableOffset: sc.reads[i].lastStable, LogStartOffset: res.LogStartOffset}
			fillPartition(sp, p.Partition, &fd, res.ErrorCode, readCommitted)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = t.Partitions[:len(t.Partitions)+1]
	}
	return resp
}

// sameTopic reports whether a and b are partitions of one topic.
func sameTopic(a, b *fetchsession.Request) bool {
	return a.Topic == b.Topic && a.TopicID == b.TopicID
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
// every request: what each partition of the session read (results, reads),
// the answers of those with records, the partitions to watch. Reused
// across fetches (a pool), so that an idle session of thousands of
// partitions costs its fetches no allocation in proportion.
type fetchScratch struct {
	results []fetchsession.Result // results[i] for the session's partition i
	reads   []sessionRead         // beside results[i], the rest of its answer
	answers []kmsg.FetchResponseTopicPartition
	keys    []replica.Key
}

// sessionRead is, beside its fetchsession.Result, what readSession read of
// one partition: its last stable offset, and where its answer is when it
// has records or aborted transactions (1 + its index in answers; 0 when
// the offsets and the error say all).
type sessionRead struct {
	lastStable int64
	answer     int32
}

var fetchScratchPool = sync.Pool{New: func() any { return new(fetchScratch) }}

func getFetchScratch() *fetchScratch { return fetchScratchPool.Get().(*fetchScratch) }

// release returns sc to the pool, holding nothing of the fetch: nil-safe.
func (sc *fetchScratch) release() {
	if sc == nil {
		return
	}
	sc.dropAnswers()
	fetchScratchPool.Put(sc)
}

// dropAnswers empties answers. The records read are the connection's once
// answered (it returns them to their pool once sent): the scratch keeps no
// reference to them.
func (sc *fetchScratch) dropAnswers() {
	clear(sc.answers)
	sc.answers = sc.answers[:0]
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

// finishFetchSession tells the session of a full fetch what was read, so
// that it may create a session of them, and gives resp the session id the
// client is to use next (0: none). An incremental fetch's answer is
// sessionAnswer's.
func finishFetchSession(f *fetchsession.Fetch, r *wire.Request, resp *kmsg.FetchResponse) {
	if f == nil {
		return
	}
	var results []fetchsession.Result
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for i := range t.Partitions {
			results = append(results, fetchResult(r, t, &t.Partitions[i]))
		}
	}
	f.Finish(results, time.Now())
	resp.SessionID = f.SessionID
}

// fetchResult is what a full fetch's answer p tells its new session (the
// offsets the next incremental answers compare against); its records may
// be in the response or left in a segment file for the connection to send
// (fetchedLen).
func fetchResult(r *wire.Request, t *kmsg.FetchResponseTopic, p *kmsg.FetchResponseTopicPartition) fetchsession.Result {
	return fetchsession.Result{
		ErrorCode: p.ErrorCode, HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
		HasRecords:       fetchedLen(r, t, p) > 0,
		DivergingEpoch:   p.DivergingEpoch.Epoch >= 0,
		PreferredReplica: p.PreferredReadReplica >= 0,
	}
}
