package api

// Fetch (key 1), v4–v16.
//
// Returns record batches from each requested partition, as stored. Limits:
// max_bytes for the whole response and partition_max_bytes per partition,
// except that the first batch of the first partition with data is returned
// whole even when larger (KIP-74), so a consumer can always make progress.
// Long polling: when less than min_bytes is available the request waits, up
// to max_wait_ms, for appends to any requested partition. v13+ names topics
// by id. Fetch sessions (KIP-227, v7+) are not kept: every answer has
// session id 0, which tells clients to send full requests; an incremental
// request for a session we do not know gets FETCH_SESSION_ID_NOT_FOUND.
// Without transactions, the last stable offset is the high watermark and
// there are no aborted transactions. Follower fetches are refused (one
// replica per partition).

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/storage"
	"kbroker/internal/wire"
)

func init() { register(kmsg.Fetch, 4, 16, handleFetch) }

func handleFetch(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	if req.Version >= 7 && req.SessionID != 0 && req.SessionEpoch > 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	fromReplica := req.ReplicaID >= 0 || (req.Version >= 15 && req.ReplicaState.ID >= 0)
	// A response never exceeds what the consumer's quota allows in one
	// window, so a small quota throttles rather than starves (KAFKA-9677).
	maxBytes := min(fetchMaxBytes(req), int32(min(s.Quotas.FetchByteCap(quotaUser(c), r.ClientID), 1<<31-1)))
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		resp, changed, done := s.readFetch(c, req, maxBytes, fromReplica)
		if done || req.MaxWaitMillis <= 0 || len(changed) == 0 {
			return s.finishFetch(c, r, resp), nil
		}
		parkedFrom := time.Now()
		woken := waitAny(ctx, changed, time.Until(deadline))
		r.Parked += time.Since(parkedFrom)
		if !woken {
			resp, _, _ = s.readFetch(c, req, maxBytes, fromReplica)
			return s.finishFetch(c, r, resp), nil
		}
	}
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
			n += len(p.RecordBatches)
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
		addThrottle(resp, throttle)
		return resp
	}
	s.countFetched(resp)
	return resp
}

// readFetch builds one answer from the logs as they are now. done is true
// when it should be sent at once (min_bytes reached, or an error); changed
// holds the logs' append notifications, taken before reading so that an
// append between the read and the wait is never missed.
func (s *Server) readFetch(c *wire.Conn, req *kmsg.FetchRequest, maxBytes int32, fromReplica bool) (resp *kmsg.FetchResponse, changed []<-chan struct{}, done bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	snap := s.Store.Snapshot()
	var total int32
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			var err error
			if fromReplica {
				err = newError(kerr.NotLeaderForPartition, "kbroker partitions have a single replica; follower fetches are not served")
			} else if err = s.topicRefAllowed(c, snap, auth.OpRead, partitionRef{name: rt.Topic, id: rt.TopicID, byID: req.Version >= 13}); err == nil {
				var l *storage.Log
				if _, l, err = s.resolve(snap, partitionRef{name: rt.Topic, id: rt.TopicID, byID: req.Version >= 13, partition: rp.Partition}); err == nil {
					err = checkLeaderEpoch(rp.CurrentLeaderEpoch)
				}
				if err == nil {
					changed = append(changed, l.Changed())
					limit := min(rp.PartitionMaxBytes, maxBytes-total)
					var res storage.ReadResult
					res, err = l.Read(rp.FetchOffset, max(limit, 0), total == 0)
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
					if err != nil {
						sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.HighWatermark(), l.HighWatermark(), l.LogStartOffset()
					}
					sp.RecordBatches = res.Records
					total += int32(len(res.Records))
				}
			}
			if err != nil {
				done = true
				sp.ErrorCode, _ = errorCode(err)
			}
			if sp.RecordBatches == nil { // Kafka sends empty records, never null: librdkafka rejects MessageSetSize -1
				sp.RecordBatches = []byte{}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, changed, done || total >= req.MinBytes
}

// checkLeaderEpoch compares the client's view of the leader epoch with ours
// (always 0: leadership never moves yet), as KIP-320 asks.
func checkLeaderEpoch(epoch int32) error {
	switch {
	case epoch < 0 || epoch == 0:
		return nil
	default:
		return newError(kerr.UnknownLeaderEpoch, "The leader epoch in the request is newer than the broker's.")
	}
}

func (s *Server) countFetched(resp *kmsg.FetchResponse) {
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
			n += len(p.RecordBatches)
		}
		if n > 0 {
			s.Metrics.BytesOut.WithLabelValues(name).Add(float64(n))
		}
	}
}

// waitAny waits until one of chans is closed (true), or the timeout or ctx
// ends (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	if timeout <= 0 {
		return false
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}
