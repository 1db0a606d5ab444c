package group

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stats is what the metrics of this broker's groups report, taken when
// /metrics is scraped.
type Stats struct {
	// Groups counts the groups by state; every state a live group can be
	// in is present, zero or not, so a scrape shows a state emptying.
	Groups map[State]int
	// ConsumerGroups counts the KIP-848 consumer groups by state (Empty,
	// Assigning, Reconciling, Stable), every state present.
	ConsumerGroups map[string]int
	// Offsets are the committed offsets of every group, sorted by group,
	// topic and partition so that a cap on them keeps the same series from
	// one scrape to the next.
	Offsets []CommittedOffset
	// Rebalances counts the join phases completed (each a new generation).
	Rebalances uint64
	// CommitsOK and CommitsFailed count the partitions of OffsetCommit
	// requests answered without and with an error.
	CommitsOK, CommitsFailed uint64
}

// CommittedOffset is one group's committed offset for one partition.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// liveStates are the states a group held by a shard can be in (Dead
// groups are removed from it).
var liveStates = []State{Empty, PreparingRebalance, CompletingRebalance, Stable}

// counters are the coordinator's running totals, bumped on the shards'
// loops and read by the scrape.
type counters struct {
	rebalances, commitsOK, commitsFailed atomic.Uint64
}

func (c *counters) countCommit(resp []kmsg.OffsetCommitResponseTopic) {
	var ok, failed uint64
	for _, t := range resp {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				ok++
			} else {
				failed++
			}
		}
	}
	c.commitsOK.Add(ok)
	c.commitsFailed.Add(failed)
}

// shardStats is one shard's part of Stats.
type shardStats struct {
	groups         map[State]int
	consumerGroups map[string]int
	offsets        []CommittedOffset
}

// Stats copies the groups and committed offsets of every loaded shard. The
// copy is made on each shard's loop, by a function sent to it, so the
// commit path pays nothing for the metrics and no shard state is read from
// another goroutine; the shards are asked in parallel, and one that does
// not answer before ctx ends is left out, as is one still loading.
func (c *Coordinator) Stats(ctx context.Context) Stats {
	st := Stats{
		Groups:        map[State]int{},
		Rebalances:    c.counters.rebalances.Load(),
		CommitsOK:     c.counters.commitsOK.Load(),
		CommitsFailed: c.counters.commitsFailed.Load(),
	}
	for _, s := range liveStates {
		st.Groups[s] = 0
	}
	st.ConsumerGroups = map[string]int{}
	for _, s := range consumerStates {
		st.ConsumerGroups[s] = 0
	}
	shards := c.rt.Shards()
	// Buffered for every shard, so that one answering after ctx ended
	// does not keep its goroutine waiting for a reader.
	parts := make(chan shardStats, len(shards))
	asked := 0
	for _, rs := range shards {
		if !rs.Loaded() {
			continue // its groups are not known yet
		}
		asked++
		go func() {
			part, _, errc := runOn(ctx, rs, func(s *shard, done func(shardStats)) { done(s.stats()) })
			if errc != nil {
				part = shardStats{}
			}
			parts <- part
		}()
	}
collect:
	for ; asked > 0; asked-- {
		select {
		case part := <-parts:
			for state, n := range part.groups {
				st.Groups[state] += n
			}
			for state, n := range part.consumerGroups {
				st.ConsumerGroups[state] += n
			}
			st.Offsets = append(st.Offsets, part.offsets...)
		case <-ctx.Done():
			break collect
		}
	}
	sort.Slice(st.Offsets, func(i, j int) bool {
		a, b := st.Offsets[i], st.Offsets[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return st
}

func (s *shard) stats() shardStats {
	out := shardStats{groups: map[State]int{}, consumerGroups: map[string]int{}}
	for _, g := range s.groups {
		if g.consumer != nil {
			out.consumerGroups[g.consumer.state()]++
		} else {
			out.groups[g.state]++
		}
		for topic, ps := range g.offsets {
			for p, c := range ps {
				out.offsets = append(out.offsets, CommittedOffset{Group: g.id, Topic: topic, Partition: p, Offset: c.offset})
			}
		}
	}
	return out
}
