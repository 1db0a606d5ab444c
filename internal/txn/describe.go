package txn

import (
	"context"
	"regexp"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Described is one id of DescribeTransactions (KIP-664).
type Described struct {
	Err           *kerr.Error
	State         State
	TimeoutMillis int32
	// StartMillis is -1 outside a transaction.
	StartMillis   int64
	ProducerID    int64
	ProducerEpoch int16
	Partitions    []TopicPartition
}

// Describe reports id's state; an unknown (or expired) id is
// TRANSACTIONAL_ID_NOT_FOUND.
func (c *Coordinator) Describe(ctx context.Context, id string) Described {
	d, errc := call(ctx, c, id, func(s *shard, done func(Described)) {
		m := s.txns[id]
		if m == nil || m.state == Dead {
			done(Described{Err: kerr.TransactionalIDNotFound})
			return
		}
		out := Described{State: m.state, TimeoutMillis: int32(m.timeout.Milliseconds()), StartMillis: -1,
			ProducerID: m.producerID, ProducerEpoch: m.epoch, Partitions: m.sortedPartitions()}
		if !m.start.IsZero() {
			out.StartMillis = m.start.UnixMilli()
		}
		done(out)
	})
	if errc != nil {
		return Described{Err: errc}
	}
	return d
}

// ListFilter selects ListTransactions' ids: by state and producer id (any
// of them; none: all), v1's minimum duration of the open transaction, v2's
// id pattern.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDuration, when positive, keeps transactions open at least that
	// long (Kafka: DurationFilter; no open transaction never matches).
	MinDuration time.Duration
	Pattern     *regexp.Regexp
}

// Listed is one id of ListTransactions.
type Listed struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// List returns the ids this broker coordinates that match f, by id. A
// shard still loading is skipped, as Kafka lists only what it has loaded.
func (c *Coordinator) List(ctx context.Context, f ListFilter) []Listed {
	var out []Listed
	for _, rs := range c.rt.Shards() {
		if !rs.Loaded() {
			continue
		}
		got, errc := runOn(ctx, rs, func(s *shard, done func([]Listed)) { done(s.list(f)) })
		if errc == nil {
			out = append(out, got...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

func (s *shard) list(f ListFilter) []Listed {
	now := s.now()
	var out []Listed
	for _, m := range s.txns {
		if m.state == Dead || !f.matches(m, now) {
			continue
		}
		out = append(out, Listed{TransactionalID: m.id, ProducerID: m.producerID, State: m.state})
	}
	return out
}

func (f *ListFilter) matches(m *txnMeta, now time.Time) bool {
	if len(f.States) > 0 && !contains(f.States, m.state) {
		return false
	}
	if len(f.ProducerIDs) > 0 && !contains(f.ProducerIDs, m.producerID) {
		return false
	}
	if f.MinDuration > 0 && (m.start.IsZero() || now.Sub(m.start) < f.MinDuration) {
		return false
	}
	return f.Pattern == nil || f.Pattern.MatchString(m.id)
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// DescribedTopics groups partitions by topic as DescribeTransactions
// answers them.
func DescribedTopics(ps []TopicPartition) []kmsg.DescribeTransactionsResponseTransactionStateTopic {
	var out []kmsg.DescribeTransactionsResponseTransactionStateTopic
	for _, tp := range ps {
		if n := len(out); n == 0 || out[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.Topic
			out = append(out, t)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, tp.Partition)
	}
	return out
}
