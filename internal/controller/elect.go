package controller

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/refusal"
)

// Elections asked for: ElectLeaders (key 43, KIP-183/KIP-460), preferred
// or unclean, and the controller's automatic rebalance back to preferred
// leaders (auto.leader.rebalance.enable). Each election is an
// AlterPartition compare-and-swap made by the broker that received the
// request, as topic creation is: the store's transactions serialize it
// with the elected controller's own changes. The rules are Kafka's
// (ReplicationControlManager.electLeader): a preferred election makes the
// first replica the leader when it is in the ISR and may lead (live, not
// shutting down); an unclean one gives a partition without a leader one,
// from the ISR if it can, else from any replica that may lead.

// The refusals of an election, each a refusal.Error with Kafka's message.
var (
	// ErrElectionNotNeeded: the preferred replica leads already (a
	// preferred election), or the partition has a leader (unclean).
	ErrElectionNotNeeded = errors.New("election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is not in the
	// ISR, not live, or shutting down.
	ErrPreferredLeaderNotAvailable = errors.New("preferred leader not available")
	// ErrEligibleLeadersNotAvailable: an unclean election found no replica
	// that may lead.
	ErrEligibleLeadersNotAvailable = errors.New("eligible leaders not available")
)

// ElectionType is ElectLeaders' election_type.
type ElectionType int8

const (
	// ElectPreferred moves leadership to the first replica.
	ElectPreferred ElectionType = 0
	// ElectUnclean gives a leaderless partition a leader, out of the ISR
	// if it must.
	ElectUnclean ElectionType = 1
)

// electionAttempts bounds the compare-and-swap retries of one requested
// election when the partition changes under it.
const electionAttempts = 5

// Elect runs one requested election of partition p of topic.
func (c *Controller) Elect(ctx context.Context, typ ElectionType, topic string, p int32) error {
	for attempt := 0; ; attempt++ {
		snap := c.store.Snapshot()
		t := snap.Topic(topic)
		if t == nil {
			return refusal.New(meta.ErrUnknownTopic, "No such topic as "+topic)
		}
		if p < 0 || p >= t.Partitions {
			return refusal.New(meta.ErrUnknownPartition, "No such partition as "+topic+"-"+strconv.Itoa(int(p)))
		}
		cur := snap.Partition(t, p)
		next, err := requestedElection(cur, typ, EligibleLeaders(snap))
		if err != nil {
			return err
		}
		_, err = c.store.AlterPartition(ctx, topic, t.ID, p, cur, next)
		if err == nil {
			c.log.Info("elected a partition leader on request", "topic", topic, "partition", p, "election", typ.String(), "leader", next.Leader, "was", cur.Leader, "leader_epoch", next.LeaderEpoch)
			return nil
		}
		if (!errors.Is(err, meta.ErrPartitionChanged) && !errors.Is(err, meta.ErrFencedLeaderEpoch)) || attempt+1 == electionAttempts {
			return err
		}
	}
}

// ElectAll runs a requested election on every partition, and returns the
// outcome of those that were elected or failed for another reason than
// ELECTION_NOT_NEEDED, as Kafka answers an ElectLeaders without topics.
func (c *Controller) ElectAll(ctx context.Context, typ ElectionType) map[string]map[int32]error {
	out := map[string]map[int32]error{}
	snap := c.store.Snapshot()
	eligible := EligibleLeaders(snap)
	for name, t := range snap.AllTopics() {
		for p := int32(0); p < t.Partitions; p++ {
			// A quick look first: most partitions need nothing, and
			// Elect would only say so.
			if _, err := requestedElection(snap.Partition(t, p), typ, eligible); errors.Is(err, ErrElectionNotNeeded) {
				continue
			}
			err := c.Elect(ctx, typ, name, p)
			if errors.Is(err, ErrElectionNotNeeded) {
				continue
			}
			if out[name] == nil {
				out[name] = map[int32]error{}
			}
			out[name][p] = err
		}
	}
	return out
}

func (typ ElectionType) String() string {
	if typ == ElectUnclean {
		return "UNCLEAN"
	}
	return "PREFERRED"
}

// requestedElection is the state an election of type typ gives cur, or its
// refusal; eligible are the brokers that may lead.
func requestedElection(cur meta.PartitionRecord, typ ElectionType, eligible map[int32]*meta.Broker) (meta.PartitionRecord, error) {
	mayLead := func(id int32) bool { _, ok := eligible[id]; return ok }
	next := cur
	switch typ {
	case ElectUnclean:
		if cur.Leader >= 0 || len(cur.Replicas) == 0 {
			return cur, refusal.New(ErrElectionNotNeeded, "Leader election not needed for topic partition.")
		}
		next.Leader = -1
		for _, id := range cur.Replicas {
			if mayLead(id) && slices.Contains(cur.ISR, id) {
				next.Leader = id
				break
			}
		}
		if next.Leader < 0 && len(cur.ISR) == 0 {
			// An eligible leader replica (KIP-966) holds every committed
			// record: it is preferred to an unclean choice, as Kafka's
			// PartitionChangeBuilder prefers it.
			for _, id := range cur.Replicas {
				if mayLead(id) && slices.Contains(cur.ELR, id) {
					next.Leader, next.ISR = id, []int32{id}
					next.ELR = slices.DeleteFunc(slices.Clone(cur.ELR), func(e int32) bool { return e == id })
					break
				}
			}
		}
		if next.Leader < 0 {
			for _, id := range cur.Replicas {
				if mayLead(id) {
					// Unclean: whatever the ELR promised is gone.
					next.Leader, next.ISR, next.ELR = id, []int32{id}, nil
					break
				}
			}
		}
		if next.Leader < 0 {
			return cur, refusal.New(ErrEligibleLeadersNotAvailable, "Eligible topic partition leaders are not available.")
		}
	default:
		if len(cur.Replicas) == 0 || cur.Leader == cur.Replicas[0] {
			return cur, refusal.New(ErrElectionNotNeeded, "Leader election not needed for topic partition.")
		}
		preferred := cur.Replicas[0]
		if !mayLead(preferred) || !slices.Contains(cur.ISR, preferred) {
			return cur, refusal.New(ErrPreferredLeaderNotAvailable, "The preferred leader was not available.")
		}
		next.Leader = preferred
	}
	next.LeaderEpoch = cur.LeaderEpoch + 1
	return meta.WithLastKnownLeader(cur, next), nil
}

// EligibleLeaders are the brokers of snap that may lead or be in an ISR:
// the live ones not in controlled shutdown, and not registered after an
// unclean shutdown that the controller has yet to act on.
func EligibleLeaders(snap *meta.Snapshot) map[int32]*meta.Broker {
	live := snap.LiveBrokers()
	ineligible := func(b *meta.Broker) bool { return b.InControlledShutdown || b.UncleanShutdown }
	some := false
	for _, b := range live {
		some = some || ineligible(b)
	}
	if !some {
		return live
	}
	out := make(map[int32]*meta.Broker, len(live))
	for id, b := range live {
		if !ineligible(b) {
			out[id] = b
		}
	}
	return out
}

// rebalanceLeaders is the automatic preferred election
// (auto.leader.rebalance.enable): every replicated partition not led by
// its preferred replica, when that replica may lead and is in sync, gets
// it back as leader. Kafka's KRaft controller does the same for every
// imbalanced partition each leader.imbalance.check.interval.seconds (it
// has no per-broker threshold any more). It returns how many it moved.
func (c *Controller) rebalanceLeaders(ctx context.Context, snap *meta.Snapshot) int {
	eligible := EligibleLeaders(snap)
	moved := 0
	for name, t := range snap.AllTopics() {
		for p := int32(0); p < t.Partitions; p++ {
			cur := snap.Partition(t, p)
			if len(cur.Replicas) < 2 || cur.Reassigning() {
				continue
			}
			next, err := requestedElection(cur, ElectPreferred, eligible)
			if err != nil {
				continue
			}
			if _, err := c.store.AlterPartition(ctx, name, t.ID, p, cur, next); err != nil {
				continue // changed meanwhile: the next check looks again
			}
			moved++
			c.log.Info("moved leadership back to the preferred replica", "topic", name, "partition", p, "leader", next.Leader, "was", cur.Leader, "leader_epoch", next.LeaderEpoch)
		}
	}
	return moved
}

// rebalanceInterval is leader.imbalance.check.interval.seconds, 0 when
// auto.leader.rebalance.enable is off.
func (c *Controller) rebalanceInterval() time.Duration {
	static := config.Layers{Static: c.broker.Props}
	if config.BrokerValue("auto.leader.rebalance.enable", static) != "true" {
		return 0
	}
	secs, err := strconv.Atoi(config.BrokerValue("leader.imbalance.check.interval.seconds", static))
	if err != nil || secs < 1 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// runRebalance runs rebalanceLeaders every interval while this broker is
// the controller, until ctx ends.
func (e *Elections) runRebalance(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if e.isController() {
			e.c.rebalanceLeaders(ctx, e.c.store.Snapshot())
		}
	}
}

// ShutdownPending counts the replicated partitions broker id still leads,
// or whose ISR it shares with others: what its controlled shutdown waits
// to see at zero.
func ShutdownPending(snap *meta.Snapshot, id int32) int {
	n := 0
	for _, t := range snap.AllTopics() {
		for p := int32(0); p < t.Partitions; p++ {
			r := snap.Partition(t, p)
			if len(r.Replicas) < 2 {
				continue // no other replica could take it
			}
			if r.Leader == id || (len(r.ISR) > 1 && slices.Contains(r.ISR, id)) {
				n++
			}
		}
	}
	return n
}

// partitionChangesPerTx bounds the partition changes committed in one
// store transaction: each reads one record and writes it, so 40 stay well
// under etcd's default --max-txn-ops (128).
const partitionChangesPerTx = 40

// commitPartitionChanges commits the changes of one pass of the
// controller, partitionChangesPerTx at a time, so that the leaderships of
// a broker in controlled shutdown (or of one that died) move together and
// a client needs one metadata refresh; it returns how many were written.
// A change another writer beat is dropped: the next pass computes it
// again.
func (c *Controller) commitPartitionChanges(ctx context.Context, changes []meta.PartitionChange) int {
	changed := 0
	for len(changes) > 0 {
		batch := changes[:min(len(changes), partitionChangesPerTx)]
		changes = changes[len(batch):]
		errs, err := c.store.AlterPartitions(ctx, batch)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("partition elections failed", "partitions", len(batch), "err", err)
			}
			continue
		}
		for i, ch := range batch {
			if err := errs[i]; err != nil {
				if !errors.Is(err, meta.ErrPartitionChanged) && !errors.Is(err, meta.ErrFencedLeaderEpoch) && !errors.Is(err, meta.ErrUnknownPartition) && ctx.Err() == nil {
					c.log.Warn("partition election failed", "topic", ch.Topic, "partition", ch.Partition, "err", err)
				}
				continue
			}
			changed++
			if ch.Next.Leader != ch.Expected.Leader {
				c.log.Info("elected a partition leader", "topic", ch.Topic, "partition", ch.Partition, "leader", ch.Next.Leader, "was", ch.Expected.Leader, "leader_epoch", ch.Next.LeaderEpoch, "isr", ch.Next.ISR)
			}
		}
	}
	return changed
}
