package group

import (
	"context"
	"slices"

	"kbroker/internal/coordinator"
)

// TopicsDeleted removes the committed offsets of topics from every group of
// every shard here, as Kafka's coordinator does when partitions are deleted
// (onPartitionsDeleted): a tombstone per offset is appended to
// `__consumer_offsets`, so the offsets do not come back when the shard
// replays its log, and a topic recreated under the same name starts with
// no commits. A group left Empty with no offsets is deleted with them (its
// own tombstone), as Kafka's cleanup deletes an empty group whose offsets
// are all gone.
//
// It waits for the shards until ctx ends. A shard still replaying its log
// gets the cleanup as soon as it has loaded (the work is queued on its
// loop): the offsets it is reading back are removed before it serves them
// for long, whether or not TopicsDeleted is still waiting.
func (c *Coordinator) TopicsDeleted(ctx context.Context, topics []string) {
	topics = slices.DeleteFunc(slices.Clone(topics), func(t string) bool { return t == Topic })
	if len(topics) == 0 {
		return
	}
	shards := c.rt.Shards()
	done := make(chan struct{}, len(shards))
	for _, rs := range shards {
		go func() {
			// Do only queues the work on the shard's loop (which takes
			// it after its replay): wait until it has run, so the
			// tombstones are written when DeleteTopics answers. Do fails
			// only for a shard that stopped, whose next owner replays
			// the tombstones written so far.
			dropped := make(chan struct{})
			if rs.Do(func() { rs.State().(*shard).dropTopics(topics); close(dropped) }) == nil {
				select {
				case <-dropped:
				case <-ctx.Done():
				}
			}
			done <- struct{}{}
		}()
	}
	for range shards {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// dropTopics tombstones every offset of topics, group by group: one write
// per group, so a failed write leaves that group's offsets (and the
// tombstones not yet written) as they were rather than half gone.
func (s *shard) dropTopics(topics []string) {
	for _, g := range s.groups {
		var records []coordinator.Record
		var gone []string
		for _, topic := range topics {
			ps := g.offsets[topic]
			if len(ps) == 0 {
				continue
			}
			for p := range ps {
				records = append(records, offsetTombstone(g.id, topic, p))
			}
			gone = append(gone, topic)
		}
		if len(records) == 0 {
			continue
		}
		dropGroup := g.state == Empty && len(g.pending) == 0 && countOffsets(g) == len(records)
		if dropGroup {
			records = append(records, groupTombstone(g.id))
		}
		if e := s.write(records...); e != nil {
			s.rt.Logger().Warn("could not remove the committed offsets of a deleted topic", "group", g.id, "topics", gone, "err", e.Message)
			continue
		}
		for _, topic := range gone {
			delete(g.offsets, topic)
		}
		if dropGroup {
			g.transition(Dead, s.now())
			delete(s.groups, g.id)
		}
	}
}
