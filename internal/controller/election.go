package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kbroker/internal/cluster"
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
// A partition none of whose in-sync replicas is live has an empty ISR,
// its last in-sync replicas in its ELR (KIP-966), and no leader (-1)
// until one of them is live again: it stays offline rather than lose
// committed records, unless unclean.leader.election.enable lets any live
// replica lead it.

// electionInterval is how often the controller also goes over every
// partition without a metadata change: to retry a change another writer
// beat, or one that failed while etcd was unreachable. Becoming the
// controller and a change of the live brokers run a pass at once.
const electionInterval = 2 * time.Second

// electedSnapshotWait bounds how long a new controller's first pass waits
// for its store to reach the election change that made it the controller;
// past it, the pass runs on what the store has (a later pass, woken by the
// same change reaching the store, corrects it).
const electedSnapshotWait = time.Second

// Elections runs the controller's elections until Close.
type Elections struct {
	c      *Controller
	member *cluster.Member
	wake   chan struct{}
	// electedAt is the etcd revision at which this broker was seen
	// winning the controller election, until the pass it woke has waited
	// for the store to apply it; 0 when no such pass is due.
	electedAt atomic.Int64
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// StartElections runs elections whenever member says this broker is the
// controller: as soon as it wins, on every change of the live brokers,
// and every electionInterval.
func (c *Controller) StartElections(member *cluster.Member) *Elections {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elections{c: c, member: member, wake: make(chan struct{}, 1), cancel: cancel}
	c.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.ChangedBrokers() || reassignmentMoved(ev) {
			e.poke()
		}
	})
	member.OnControllerChange(func(id int32, rev int64) {
		if id == c.broker.NodeID {
			e.BecameController(rev)
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
			if !e.isController() {
				continue
			}
			if rev := e.electedAt.Swap(0); rev > 0 {
				wctx, cancel := context.WithTimeout(ctx, electedSnapshotWait)
				c.store.WaitFor(wctx, rev) // on a timeout, go on with the snapshot there is
				cancel()
			}
			e.pass(ctx)
		}
	})
	return e
}

func (e *Elections) isController() bool { return e.member.Controller() == e.c.broker.NodeID }

// pass is one election pass over the current snapshot. Once every change
// it computed is committed, the brokers that registered after an unclean
// shutdown are out of every ISR and ELR, and their mark is cleared: from
// then on they may lead and join ISRs again.
func (e *Elections) pass(ctx context.Context) {
	snap := e.c.store.Snapshot()
	if _, complete := e.c.ElectLeaders(ctx, snap); !complete {
		return // the next pass computes the rest again
	}
	for id, b := range snap.LiveBrokers() {
		if !b.UncleanShutdown {
			continue
		}
		if err := e.member.ClearUncleanShutdown(ctx, id); err != nil {
			if ctx.Err() == nil {
				e.c.log.Warn("clearing a broker's unclean-shutdown mark failed; the next pass retries", "broker", id, "err", err)
			}
			continue
		}
		e.c.log.Info("took a broker that shut down uncleanly out of every ISR and ELR", "broker", id)
	}
}

// BecameController runs a pass now, on a snapshot that includes etcd
// revision rev: the election change that made this broker the controller
// (cluster.Member.OnControllerChange). Kafka's new controller likewise
// acts on the brokers its predecessor left fenced as soon as it is
// active. Without it the pass would wait for the next tick: the change of
// the live brokers that went with the old controller's lease usually
// reaches the store, and wakes the pass, before this broker has learned
// that it won.
func (e *Elections) BecameController(rev int64) {
	for {
		cur := e.electedAt.Load()
		if rev <= cur || e.electedAt.CompareAndSwap(cur, rev) {
			break
		}
	}
	e.poke()
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
// live brokers (those in controlled shutdown count as gone, and so do
// those that registered after an unclean shutdown, which also leave every
// ELR), completes the reassignments whose target is in sync, and returns
// how many it changed and whether that was every change it computed.
func (c *Controller) ElectLeaders(ctx context.Context, snap *meta.Snapshot) (changed int, complete bool) {
	live := EligibleLeaders(snap)
	stopped := func(id int32) bool { b := snap.LiveBrokers()[id]; return b != nil && b.UncleanShutdown }
	var changes []meta.PartitionChange
	for name, t := range snap.AllTopics() {
		for p := int32(0); p < t.Partitions; p++ {
			cur := snap.Partition(t, p)
			if len(cur.Replicas) < 2 {
				continue // a single replica: its broker alone can lead it
			}
			next, ok := nextState(cur, live, stopped, c.uncleanElection(snap, name), c.minInsync(snap, name))
			if done, complete := completeReassignment(next, live); complete {
				next, ok = done, true
			}
			if !ok {
				continue
			}
			changes = append(changes, meta.PartitionChange{Topic: name, ID: t.ID, Partition: p, Expected: cur, Next: next})
		}
	}
	changed = c.commitPartitionChanges(ctx, changes)
	return changed, changed == len(changes)
}

// nextState is cur with the brokers that are not live out of the ISR and
// a live leader elected as Kafka 4's controller does with eligible leader
// replicas (KIP-966, meta/elr.go): the ISR may become empty, the replicas
// it loses below minISR go to the ELR (but for those that shut down
// uncleanly: stopped), and a live ISR member leads, else (with an empty
// ISR) a live ELR member, whose ISR it then becomes. With neither, the
// last known leader leads if it is live and the ELR is empty (Kafka's
// balanced recovery: the ELR was emptied by unclean shutdowns, and the
// last leader is the replica most likely to hold every committed record),
// else any live replica if unclean election is on (the ELR is forgotten),
// else no one. ok is false when cur needs no change.
func nextState(cur meta.PartitionRecord, live map[int32]*meta.Broker, stopped func(int32) bool, unclean bool, minISR int) (meta.PartitionRecord, bool) {
	isLive := func(id int32) bool { _, ok := live[id]; return ok }
	next := cur.WithISR(slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return !isLive(id) }), minISR)
	if slices.ContainsFunc(next.ELR, stopped) {
		next.ELR = slices.DeleteFunc(slices.Clone(next.ELR), stopped)
		if len(next.ELR) == 0 {
			next.ELR = nil
		}
	}
	eligible := func(id int32) bool {
		return isLive(id) && (slices.Contains(next.ISR, id) || len(next.ISR) == 0 && slices.Contains(next.ELR, id))
	}
	if !eligible(next.Leader) {
		next.Leader = -1
		for _, id := range cur.Replicas { // the preferred order
			if eligible(id) {
				next.Leader = id
				break
			}
		}
		if next.Leader >= 0 && slices.Contains(next.ELR, next.Leader) {
			// Elected from the ELR: it alone is in sync now.
			next.ISR = []int32{next.Leader}
			next.ELR = slices.DeleteFunc(slices.Clone(next.ELR), func(id int32) bool { return id == next.Leader })
		}
		if last := cur.LastKnownELR; next.Leader < 0 && len(next.ISR) == 0 && len(next.ELR) == 0 &&
			len(last) == 1 && isLive(last[0]) && slices.Contains(cur.Replicas, last[0]) {
			next.Leader, next.ISR = last[0], []int32{last[0]}
		}
		if next.Leader < 0 && unclean {
			for _, id := range cur.Replicas {
				if isLive(id) {
					next.Leader, next.ISR, next.ELR = id, []int32{id}, nil
					break
				}
			}
		}
	}
	next = meta.WithLastKnownLeader(cur, next)
	if next.Leader != cur.Leader {
		next.LeaderEpoch = cur.LeaderEpoch + 1
	}
	if next.Leader == cur.Leader && slices.Equal(next.ISR, cur.ISR) && slices.Equal(next.ELR, cur.ELR) && slices.Equal(next.LastKnownELR, cur.LastKnownELR) {
		return cur, false
	}
	return next, true
}

// minInsync is min.insync.replicas for topic (1 if it does not parse:
// the catalog validated it).
func (c *Controller) minInsync(snap *meta.Snapshot, topic string) int {
	if n, err := strconv.Atoi(strings.TrimSpace(c.topicConfig(snap, topic, "min.insync.replicas"))); err == nil && n > 0 {
		return n
	}
	return 1
}

// uncleanElection is unclean.leader.election.enable for topic.
func (c *Controller) uncleanElection(snap *meta.Snapshot, topic string) bool {
	return strings.TrimSpace(c.topicConfig(snap, topic, "unclean.leader.election.enable")) == "true"
}
