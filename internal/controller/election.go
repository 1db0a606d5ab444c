package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"kbroker/internal/meta"
)

// Leader election. The elected controller (internal/cluster) watches the
// live brokers, and when one goes away (its etcd lease expired, or it
// stopped) takes it out of the in-sync set of every partition, electing a
// new leader from the remaining in-sync replicas where it led, with a new
// leader epoch; a broker that comes back to a partition left without a
// leader, and still in its in-sync set, leads it again. This is what
// Kafka's controller does when it fences a broker. Every change is an
// AlterPartition compare-and-swap, so a change computed from a stale
// state (a leader's ISR change in between, another controller) is
// dropped and computed again on the next pass.
//
// A partition none of whose in-sync replicas is live keeps its last
// in-sync replica as its ISR and has no leader (-1): it stays offline
// rather than lose committed records, unless unclean.leader.election.enable
// lets any live replica lead it.

// electionInterval is how often the controller also goes over every
// partition without a metadata change: to act once it becomes the
// controller, and to retry a change another writer beat.
const electionInterval = 2 * time.Second

// Elections runs the controller's elections until Close.
type Elections struct {
	c            *Controller
	isController func() bool
	wake         chan struct{}
	cancel       context.CancelFunc
	wg           sync.WaitGroup
}

// StartElections runs elections whenever isController says this broker is
// the controller: on every change of the live brokers and every
// electionInterval.
func (c *Controller) StartElections(isController func() bool) *Elections {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elections{c: c, isController: isController, wake: make(chan struct{}, 1), cancel: cancel}
	c.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.ChangedBrokers() || reassignmentMoved(ev) {
			e.poke()
		}
	})
	if interval := c.rebalanceInterval(); interval > 0 {
		e.wg.Go(func() { e.runRebalance(ctx, interval) })
	}
	e.wg.Go(func() {
		tick := time.NewTicker(electionInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
			case <-tick.C:
			}
			if e.isController() {
				c.ElectLeaders(ctx, c.store.Snapshot())
			}
		}
	})
	return e
}

func (e *Elections) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close stops the elections and waits for a pass under way.
func (e *Elections) Close() {
	e.cancel()
	e.wg.Wait()
}

// ElectLeaders brings every replicated partition of snap in line with the
// live brokers (those in controlled shutdown count as gone), completes the
// reassignments whose target is in sync, and returns how many it changed.
func (c *Controller) ElectLeaders(ctx context.Context, snap *meta.Snapshot) int {
	live := EligibleLeaders(snap)
	var changes []meta.PartitionChange
	for name, t := range snap.AllTopics() {
		for p := int32(0); p < t.Partitions; p++ {
			cur := snap.Partition(t, p)
			if len(cur.Replicas) < 2 {
				continue // a single replica: its broker alone can lead it
			}
			next, ok := nextState(cur, live, c.uncleanElection(snap, name))
			if done, complete := completeReassignment(next, live); complete {
				next, ok = done, true
			}
			if !ok {
				continue
			}
			changes = append(changes, meta.PartitionChange{Topic: name, ID: t.ID, Partition: p, Expected: cur, Next: next})
		}
	}
	return c.commitPartitionChanges(ctx, changes)
}

// nextState is cur with the brokers that are not live out of the ISR and
// a live in-sync leader; ok is false when cur needs no change.
func nextState(cur meta.PartitionRecord, live map[int32]*meta.Broker, unclean bool) (meta.PartitionRecord, bool) {
	isLive := func(id int32) bool { _, ok := live[id]; return ok }
	next := cur
	next.ISR = slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return !isLive(id) })
	if len(next.ISR) == 0 {
		// The last in-sync replica stays in the ISR: it is the one that
		// may lead again without losing a committed record.
		last := cur.Leader
		if !slices.Contains(cur.ISR, last) && len(cur.ISR) > 0 {
			last = cur.ISR[0]
		}
		next.ISR = []int32{last}
	}
	if !isLive(next.Leader) || !slices.Contains(next.ISR, next.Leader) {
		next.Leader = -1
		for _, id := range cur.Replicas { // the preferred order
			if isLive(id) && slices.Contains(next.ISR, id) {
				next.Leader = id
				break
			}
		}
		if next.Leader < 0 && unclean {
			for _, id := range cur.Replicas {
				if isLive(id) {
					next.Leader, next.ISR = id, []int32{id}
					break
				}
			}
		}
	}
	if next.Leader != cur.Leader {
		next.LeaderEpoch = cur.LeaderEpoch + 1
	}
	if next.Leader == cur.Leader && slices.Equal(next.ISR, cur.ISR) {
		return cur, false
	}
	return next, true
}

// uncleanElection is unclean.leader.election.enable for topic: its
// override, else the broker's setting.
func (c *Controller) uncleanElection(snap *meta.Snapshot, topic string) bool {
	if v, ok := snap.TopicConfig(topic)["unclean.leader.election.enable"]; ok {
		return v == "true"
	}
	return c.broker.Props["unclean.leader.election.enable"] == "true"
}
