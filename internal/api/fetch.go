package api

// Fetch (key 1), v4–v16.
//
// Returns record batches from each requested partition, as stored. Limits:
// max_bytes for the whole response and partition_max_bytes per partition,
// except that the first batch of the first partition with data is returned
// whole even when larger (KIP-74), so a consumer can always make progress.
// Long polling: when less than min_bytes is available the request waits, up
// to max_wait_ms, for appends to any requested partition, in the delayed
// queue of internal/replica. v13+ names topics by id. Fetch sessions
// (KIP-227, v7+, fetch_session.go): a full fetch may start a session, an
// incremental one names only changed and forgotten partitions, reads (and
// long-polls on) every partition of its session, and is answered with only
// the partitions that have records, an error or new offsets; session
// errors (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
// FETCH_SESSION_TOPIC_ID_ERROR) are top-level with no partitions. The high
// watermark, the last stable offset and the leader epoch check (KIP-320) are the partition's
// state (internal/replica), which also refuses follower fetches while
// every partition has one replica. isolation_level READ_COMMITTED (1)
// reads up to the last stable offset and returns the aborted transactions
// among the batches read, so the consumer can drop theirs (Kafka's
// collectAbortedTxns); READ_UNCOMMITTED reads up to the high watermark.
// The long poll is woken by every append and marker, so a read_committed
// fetch answers once a marker moves the last stable offset.
//
// Zero copy: on plaintext listeners (wire.Conn.SendsFiles) reads of 16 KiB
// or more stay in their segment files (r.RecordFiles) and the connection
// sends them with sendfile between the kmsg-encoded framing
// (internal/wire/fetchfiles.go); TLS listeners get the bytes read, written
// from the read buffer outside the encoding. Quotas and metrics count both.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/fetchsession"
	"kbroker/internal/meta"
	"kbroker/internal/replica"
	"kbroker/internal/wire"
)

func init() { register(kmsg.Fetch, 4, 16, handleFetch) }

func handleFetch(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	fromReplica := req.ReplicaID >= 0 || (req.Version >= 15 && req.ReplicaState.ID >= 0)
	// The session says what to read: an incremental fetch reads all of its
	// session's partitions, not only those the request names.
	session, scratch := s.beginFetchSession(req, fromReplica)
	defer scratch.release()
	defer session.Release()
	if session != nil && session.ErrorCode != 0 {
		return fetchSessionError(req, session), nil
	}
	// A response never exceeds what the consumer's quota allows in one
	// window, so a small quota throttles rather than starves (KAFKA-9677).
	// A follower's fetch is replication, which client quotas do not
	// govern (Kafka's replication quota is apart, and unset by default).
	maxBytes := fetchMaxBytes(req)
	if !fromReplica {
		maxBytes = min(maxBytes, int32(min(s.Quotas.FetchByteCap(quotaUser(c), r.ClientID), 1<<31-1)))
	}
	var resp *kmsg.FetchResponse
	var throttled int // of the last read, the one answered
	r.Parked += s.Logs.LongPoll(ctx, time.Duration(req.MaxWaitMillis)*time.Millisecond, fromReplica, func(watch bool) ([]replica.Key, bool) {
		var read []replica.Key
		var done bool
		if scratch != nil {
			read, throttled, done = s.readSession(c, r, req, session, maxBytes, fromReplica, watch, scratch)
		} else {
			resp, read, throttled, done = s.readFetch(c, r, req, maxBytes, fromReplica, watch)
		}
		return read, done
	})
	if scratch != nil {
		resp = scratch.sessionAnswer(req, session, fromReplica) // only what the session must be told
	} else {
		finishFetchSession(session, r, resp)
	}
	if fromReplica {
		s.countReplicated(r, resp, throttled)
		return resp, nil
	}
	return s.finishFetch(c, r, resp), nil
}

// countReplicated counts a follower fetch's record bytes as replication
// (Kafka's ReplicationBytesOutPerSec), not as client bytes out, and
// charges no client quota for them; throttled of them count toward the
// leader's replication throttle.
func (s *Server) countReplicated(r *wire.Request, resp *kmsg.FetchResponse, throttled int) {
	var n int
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += fetchedLen(r, &t, &p)
		}
	}
	s.Logs.CountReplicationBytesOut(n, throttled)
}

// fetchReplicaState is the broker a follower's fetch comes from, with its
// broker epoch: replica_id before v15 (epoch -1, unknown), replica_state
// since (KIP-903).
func fetchReplicaState(req *kmsg.FetchRequest) replica.ReplicaState {
	if req.Version >= 15 {
		return replica.ReplicaState{ID: req.ReplicaState.ID, BrokerEpoch: req.ReplicaState.Epoch}
	}
	return replica.ReplicaState{ID: req.ReplicaID, BrokerEpoch: -1}
}

// fetchMaxBytes is the request's response limit (max_bytes, v3+).
func fetchMaxBytes(req *kmsg.FetchRequest) int32 {
	if req.Version < 3 || req.MaxBytes <= 0 {
		return 1<<31 - 1
	}
	return req.MaxBytes
}

// finishFetch charges the response's bytes to the consumer's quota. A
// throttled consumer gets the response without records (and is not charged
// for them), with the throttle time, as Kafka answers.
func (s *Server) finishFetch(c *wire.Conn, r *wire.Request, resp *kmsg.FetchResponse) *kmsg.FetchResponse {
	var n int
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += fetchedLen(r, &t, &p)
		}
	}
	user := quotaUser(c)
	if throttle := s.Quotas.RecordFetch(user, r.ClientID, n); throttle > 0 {
		s.Quotas.UnrecordFetch(user, r.ClientID, n)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].RecordBatches = []byte{}
			}
		}
		r.RecordFiles = nil
		addThrottle(resp, throttle)
		return resp
	}
	s.countFetched(r, resp)
	return resp
}

// fetchedLen is the number of record bytes answered for p: in the
// response, or left in a file for the connection to send (r.RecordFiles).
func fetchedLen(r *wire.Request, t *kmsg.FetchResponseTopic, p *kmsg.FetchResponseTopicPartition) int {
	return len(p.RecordBatches) + r.RecordFiles.Len(t.Topic, t.TopicID, p.Partition)
}

// readFetch builds one answer from the logs as they are now, for a fetch
// that names every partition it reads (full and sessionless; an
// incremental one is readSession's). done is true when it should be sent
// at once (min_bytes reached, or an error). With watch, read names the
// partitions read, for waiting on them. On plaintext listeners large reads
// are left in their segment files, in r.RecordFiles, for the connection to
// send with sendfile (wire). throttled is the bytes read of partitions the
// leader's replication throttle names (replica.FetchRead.ThrottledBytes).
func (s *Server) readFetch(c *wire.Conn, r *wire.Request, req *kmsg.FetchRequest, maxBytes int32, fromReplica, watch bool) (resp *kmsg.FetchResponse, read []replica.Key, throttled int, done bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	r.RecordFiles = nil // a long poll's earlier read
	snap := s.Store.Snapshot()
	n := countPartitions(req)
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	// Filled in place: a partition's entry is some 160 bytes, and a fetch
	// of thousands of partitions would copy each twice.
	parts := make([]kmsg.FetchResponseTopicPartition, n)
	budget := replica.NewFetchRead(maxBytes, n, watch, req.IsolationLevel == 1)
	sendsFiles := c.SendsFiles()
	byID := req.Version >= 13
	next := 0 // the index of the next partition, over all topics
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = parts[next : next+len(rt.Partitions) : next+len(rt.Partitions)]
		// Authorization and the topic are the same for every partition of
		// the topic: checked once, not once per partition.
		t, topicErr := s.fetchTopic(c, snap, partitionRef{name: rt.Topic, id: rt.TopicID, byID: byID}, fromReplica)
		for i, rp := range rt.Partitions {
			f := replica.Fetched{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			err := topicErr
			if err == nil {
				var pt replica.Partition
				if pt, err = s.resolveIn(snap, t, rp.Partition); err == nil {
					f, err = s.readPartition(r, &budget, &pt, req, rt.Topic, rt.TopicID, rp.Partition, requestParams(&rp), fromReplica, sendsFiles)
				}
			}
			var code int16
			if err != nil {
				done = true
				code, _ = errorCode(err)
			}
			fillPartition(&st.Partitions[i], rp.Partition, &f, code, req.IsolationLevel == 1 && !fromReplica)
		}
		next += len(rt.Partitions)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, budget.Keys(), budget.ThrottledBytes(), done || budget.Reached(req.MinBytes)
}

// requestParams are a requested partition's fetch parameters.
func requestParams(rp *kmsg.FetchRequestTopicPartition) fetchsession.Params {
	return fetchsession.Params{
		FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset, MaxBytes: rp.PartitionMaxBytes,
		CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch,
	}
}

// fetchTopic is what every partition of one requested topic shares: the
// permission (CLUSTER_ACTION for a follower, READ on the topic for a
// consumer) and the topic itself.
func (s *Server) fetchTopic(c *wire.Conn, snap *meta.Snapshot, ref partitionRef, fromReplica bool) (*meta.Topic, error) {
	if fromReplica {
		if err := s.followerFetchAllowed(c); err != nil {
			return nil, err
		}
	} else if err := s.topicRefAllowed(c, snap, auth.OpRead, ref); err != nil {
		return nil, err
	}
	return resolveTopic(snap, ref)
}

// readPartition reads one partition, a follower's up to the log end, a
// consumer's up to what it may see, leaving large reads in their segment
// files (r.RecordFiles) when the connection sends files. A refused read
// still says the partition's offsets, where it knows them (-1 else).
func (s *Server) readPartition(r *wire.Request, budget *replica.FetchRead, pt *replica.Partition, req *kmsg.FetchRequest,
	topic string, topicID [16]byte, partition int32, p fetchsession.Params, fromReplica, sendsFiles bool) (replica.Fetched, error) {
	// Files are by partition: a partition asked for twice is read into
	// memory the second time. Followers copy from files as consumers do.
	budget.FromFiles = sendsFiles && r.RecordFiles.Len(topic, topicID, partition) == 0
	var f replica.Fetched
	var err error
	if fromReplica {
		f, err = budget.Follower(pt, fetchReplicaState(req), p.CurrentLeaderEpoch, p.FetchOffset, p.LogStartOffset, p.MaxBytes)
	} else {
		f, err = budget.Partition(pt, p.CurrentLeaderEpoch, p.FetchOffset, p.MaxBytes)
	}
	if f.File.Len() > 0 {
		r.RecordFiles.Add(topic, topicID, partition, f.File)
	}
	return f, err
}

// fillPartition writes the answer of one partition into sp: what was read
// (f), or, with an error code, the offsets the error left (-1 if none).
// readCommitted is a consumer's isolation_level READ_COMMITTED: its
// aborted transactions are an array, empty if none, where Kafka answers
// null for read_uncommitted and for errors.
func fillPartition(sp *kmsg.FetchResponseTopicPartition, partition int32, f *replica.Fetched, code int16, readCommitted bool) {
	*sp = kmsg.FetchResponseTopicPartition{} // a reused array holds an earlier answer
	sp.Default()
	sp.Partition, sp.ErrorCode = partition, code
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = f.HighWatermark, f.LastStableOffset, f.LogStartOffset
	sp.RecordBatches = f.Records
	if sp.RecordBatches == nil { // Kafka sends empty records, never null: librdkafka rejects MessageSetSize -1
		sp.RecordBatches = []byte{}
	}
	if code == 0 && readCommitted {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(f.AbortedTxns))
	}
	for _, a := range f.AbortedTxns {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		sp.AbortedTransactions = append(sp.AbortedTransactions, at)
	}
}

func (s *Server) countFetched(r *wire.Request, resp *kmsg.FetchResponse) {
	snap := s.Store.Snapshot()
	for _, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			if mt := snap.TopicByID(t.TopicID); mt != nil {
				name = mt.Name
			}
		}
		var n int
		for _, p := range t.Partitions {
			n += fetchedLen(r, &t, &p)
		}
		if n > 0 {
			s.Metrics.BytesOut.WithLabelValues(name).Add(float64(n))
		}
	}
}
