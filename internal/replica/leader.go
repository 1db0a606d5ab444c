package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// The leader's side of replication. A partition with more than one replica
// has its high watermark moved by its leader (storage.Log.SetReplicated):
// the leader learns each follower's log end offset from the offset the
// follower fetches from, as Kafka's Partition.updateFollowerFetchState
// does, and commits up to the smallest log end offset among the in-sync
// replicas. A partition of one replica is left as it always was: every
// append commits.

// replicationState is what Partitions keeps for the partitions it leads
// with followers.
type replicationState struct {
	mu      sync.Mutex
	leading map[Key]*leadership
}

// leadership is one partition this broker leads with followers, in one
// leader epoch. A new epoch starts it afresh: what followers fetched from
// an earlier leader says nothing of what they hold now.
type leadership struct {
	log   *storage.Log
	key   Key
	topic string
	self  int32
	// epochStart is the log end offset when this epoch began: a follower
	// joins the ISR only once it has everything up to it.
	epochStart int64

	mu             sync.Mutex
	epoch          int32
	partitionEpoch int32   // of the record isr is from
	replicas, isr  []int32 // from the partition record
	// elr and lastKnownELR are the record's (KIP-966): an ISR change
	// carries them on (meta.PartitionRecord.WithISR).
	elr, lastKnownELR []int32
	// adding and removing are the record's reassignment in progress: an
	// ISR change writes the record as it read it but for the ISR, so it
	// neither ends nor restarts a reassignment.
	adding, removing []int32
	// minISR is the topic's min.insync.replicas now: below it the high
	// watermark stays where it is (KIP-966), so that the replicas that
	// left the ISR, now in the ELR, hold every committed record.
	minISR    func() int
	followers map[int32]*followerState
	proposing bool // an ISR change is being committed
	store     *meta.Store
	delayed   *DelayedQueue[Key]
	counters  *replicationCounters
}

// followerState is what the leader knows of one follower.
type followerState struct {
	// logEnd is the follower's log end offset, -1 until it fetches.
	logEnd int64
	// lastFetch is when it last fetched, and leaderEndAtLastFetch the
	// leader's log end offset then.
	lastFetch            time.Time
	leaderEndAtLastFetch int64
	// caughtUp is the last time it had everything the leader had (at the
	// time of one of its fetches): replica.lag.time.max.ms is measured
	// from it.
	caughtUp time.Time
	// logStart is the follower's log start offset as its last fetch said
	// (-1: unknown), from which the leader's low watermark is computed
	// (delete_records.go).
	logStart int64
	// brokerEpoch is the broker epoch its last fetch carried (KIP-903; -1:
	// none sent), which must be its registration's for it to join the ISR:
	// a fetch of an earlier run of the broker, answered after it
	// registered again, says nothing of what the new run holds.
	brokerEpoch int64
}

// lead returns the leadership of key (a partition whose state st has
// followers) over l, starting a new one when st is of another leader epoch
// than the one held: the log's high watermark passes to the leader, and
// the batches it appends carry the new epoch.
func (p *Partitions) lead(key Key, topic string, st PartitionState, l *storage.Log) *leadership {
	p.repl.mu.Lock()
	defer p.repl.mu.Unlock()
	ld := p.repl.leading[key]
	if ld != nil && ld.log == l {
		ld.mu.Lock()
		same := ld.epoch == st.LeaderEpoch
		if same && st.PartitionEpoch > ld.partitionEpoch {
			ld.isr, ld.replicas, ld.partitionEpoch = st.ISR, st.Replicas, st.PartitionEpoch
			ld.elr, ld.lastKnownELR = st.ELR, st.LastKnownELR
			ld.adding, ld.removing = st.AddingReplicas, st.RemovingReplicas
			// A reassignment changes the replicas within an epoch, as
			// Kafka's controller adds replicas without a new leader
			// epoch: the leader tracks an added follower from now on
			// and forgets a removed one.
			ld.syncFollowersLocked(time.Now())
		}
		ld.mu.Unlock()
		if same {
			return ld
		}
	}
	l.SetReplicated(true)
	if err := l.StartLeaderEpoch(st.LeaderEpoch); err != nil {
		p.log.Warn("recording a leader epoch", "topic", topic, "partition", key.Partition, "epoch", st.LeaderEpoch, "err", err)
	}
	now := time.Now()
	ld = &leadership{log: l, store: p.store, delayed: p.delayed, counters: &p.counters, key: key, topic: topic, self: p.broker.NodeID, epochStart: l.LogEndOffset(),
		epoch: st.LeaderEpoch, partitionEpoch: st.PartitionEpoch, replicas: st.Replicas, isr: st.ISR, followers: map[int32]*followerState{},
		elr: st.ELR, lastKnownELR: st.LastKnownELR, adding: st.AddingReplicas, removing: st.RemovingReplicas,
		minISR: func() int { return p.MinInsyncReplicas(p.store.Snapshot(), topic) }}
	ld.syncFollowersLocked(now)
	if p.repl.leading == nil {
		p.repl.leading = map[Key]*leadership{}
	}
	p.repl.leading[key] = ld
	return ld
}

// leadAlone hands the high watermark of l, a partition this broker now
// leads with no follower, back to its appends: a partition reassigned
// down to one replica, or to this broker alone after it copied the log as
// a follower. Nothing would move the high watermark of a replicated log
// with no follower to fetch, and consumers would see nothing new.
func (p *Partitions) leadAlone(key Key, l *storage.Log) {
	p.forget(key)
	l.SetReplicated(false)
	p.delayed.Notify(key) // long-polling fetches see the records now committed
}

// syncFollowersLocked makes the followers ld tracks those of its replicas:
// one added (a new epoch's followers, or a replica a reassignment adds)
// starts out caught up, as in Kafka, so that a new leader does not shrink
// the ISR before its followers could fetch; one no longer a replica (a
// reassignment completed) is forgotten, so its last fetch holds back
// nothing. The caller holds ld.mu, or is building ld.
func (ld *leadership) syncFollowersLocked(now time.Time) {
	for id := range ld.followers {
		if !slices.Contains(ld.replicas, id) {
			delete(ld.followers, id)
		}
	}
	for _, id := range ld.replicas {
		if _, ok := ld.followers[id]; !ok && id != ld.self {
			ld.followers[id] = &followerState{logEnd: -1, caughtUp: now, logStart: -1, brokerEpoch: -1}
		}
	}
}

// forget drops the leadership of key (its topic is gone, or another
// broker leads it), and reports whether this broker was leading it.
func (p *Partitions) forget(key Key) bool {
	p.repl.mu.Lock()
	_, was := p.repl.leading[key]
	delete(p.repl.leading, key)
	p.repl.mu.Unlock()
	return was
}

// dropLostLeaderships forgets the partitions ev moved away from this
// broker (another leader, or none), and wakes what waits on them: an
// acks=all produce then answers NOT_LEADER_OR_FOLLOWER (AwaitCommitted).
func (p *Partitions) dropLostLeaderships(ev meta.Event) {
	var lost []Key
	p.repl.mu.Lock()
	if ev.Full {
		for key := range p.repl.leading {
			if !p.stillLeads(ev.Cur, key) {
				lost = append(lost, key)
			}
		}
	} else {
		for _, k := range ev.ChangedPartitions() {
			key := Key{k.Topic, k.Partition}
			if _, ok := p.repl.leading[key]; ok && !p.stillLeads(ev.Cur, key) {
				lost = append(lost, key)
			}
		}
	}
	for _, key := range lost {
		delete(p.repl.leading, key)
	}
	p.repl.mu.Unlock()
	for _, key := range lost {
		p.delayed.Notify(key)
	}
}

// ReplicaState is who sends a follower's fetch: the broker, and the broker
// epoch of its registration (Fetch v15+ ReplicaState; -1: not sent, as
// before v15).
type ReplicaState struct {
	ID          int32
	BrokerEpoch int64
}

// FollowerFetch reads pt for the follower from, which fetches from
// offset, its log end offset: the leader records it, commits what every
// in-sync replica now has, and answers with batches up to its own log end
// (not the high watermark: a follower copies the whole log) and the high
// watermark, from which the follower learns what is committed.
func (pt *Partition) FollowerFetch(from ReplicaState, leaderEpoch int32, offset, logStart int64, maxBytes int32, minOneBatch bool) (Fetched, error) {
	return pt.followerFetch(from, leaderEpoch, offset, logStart, maxBytes, minOneBatch, false, false)
}

// FollowerFetchFile is FollowerFetch for a sender that can send from
// files: a read of storage.FileRangeMin bytes or more is left in its
// segment file (Fetched.File), so copying a partition to a follower costs
// no copy through user space, as a consumer's fetch does not.
func (pt *Partition) FollowerFetchFile(from ReplicaState, leaderEpoch int32, offset, logStart int64, maxBytes int32, minOneBatch bool) (Fetched, error) {
	return pt.followerFetch(from, leaderEpoch, offset, logStart, maxBytes, minOneBatch, true, false)
}

// followerFetch is FollowerFetch; withhold answers with the offsets and no
// records (the replication throttle, throttle.go).
func (pt *Partition) followerFetch(from ReplicaState, leaderEpoch int32, offset, logStart int64, maxBytes int32, minOneBatch, asFile, withhold bool) (Fetched, error) {
	replicaID := from.ID
	none := Fetched{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
	if err := pt.CheckLeaderEpoch(leaderEpoch); err != nil {
		return none, err
	}
	ld := pt.leader
	if ld == nil || !slices.Contains(pt.Replicas, replicaID) || replicaID == pt.Leader {
		return none, &stateError{ErrNotLeader, fmt.Sprintf("Replica %d is not recognized as a valid replica of %s-%d", replicaID, pt.Topic, pt.Key.Partition)}
	}
	advanced, expand, err := ld.recordFetch(from, offset, time.Now())
	if err != nil {
		return none, err
	}
	if ld.recordLogStart(replicaID, logStart) {
		advanced = true // a DeleteRecords waiting for the low watermark
	}
	if advanced {
		// acks=all produces and consumers waiting for the high watermark;
		// the other followers' fetches wait for records, not for this.
		pt.delayed.NotifyCommitted(pt.Key)
	}
	if expand != nil {
		ld.alterISR(expand)
	}
	var res storage.ReadResult
	if withhold && offset >= pt.log.LogStartOffset() && offset <= pt.log.LogEndOffset() {
		// An offset out of range is still refused: the follower must
		// learn it, throttled or not.
		return Fetched{HighWatermark: pt.HighWatermark(), LastStableOffset: pt.LastStableOffset(), LogStartOffset: pt.LogStartOffset()}, nil
	}
	if asFile {
		res, err = pt.log.ReadRangeUpTo(offset, maxBytes, minOneBatch, pt.log.LogEndOffset())
	} else {
		res, err = pt.log.ReadUpTo(offset, maxBytes, minOneBatch, pt.log.LogEndOffset())
	}
	if err != nil {
		return Fetched{HighWatermark: pt.HighWatermark(), LastStableOffset: pt.LastStableOffset(), LogStartOffset: pt.LogStartOffset()}, err
	}
	return Fetched{Records: res.Records, File: res.File, HighWatermark: pt.HighWatermark(), LastStableOffset: pt.LastStableOffset(), LogStartOffset: res.LogStartOffset}, nil
}

// recordFetch notes that follower from fetched from offset at now, and
// advances the high watermark if it can; it reports whether it moved, and
// the ISR to propose when the follower is out of it and has caught up. A
// fetch of an older broker epoch than the follower's last one (an earlier
// run's, answered late) is refused, as Kafka's
// Replica.updateFetchStateOrThrow refuses it: NOT_LEADER_OR_FOLLOWER.
func (ld *leadership) recordFetch(from ReplicaState, offset int64, now time.Time) (advanced bool, expand []int32, err error) {
	id := from.ID
	leaderEnd := ld.log.LogEndOffset()
	ld.mu.Lock()
	defer ld.mu.Unlock()
	f := ld.followers[id]
	if f == nil || offset > leaderEnd {
		// Past the leader's end the follower's log has diverged: it is
		// refused (OFFSET_OUT_OF_RANGE) and counts for nothing here.
		return false, nil, nil
	}
	if from.BrokerEpoch != -1 && f.brokerEpoch > from.BrokerEpoch {
		return false, nil, &stateError{ErrNotLeader, fmt.Sprintf("Received stale fetch state update. broker epoch=%d vs expected=%d", from.BrokerEpoch, f.brokerEpoch)}
	}
	f.brokerEpoch = from.BrokerEpoch
	switch {
	case offset >= leaderEnd:
		f.caughtUp = now
	case offset >= f.leaderEndAtLastFetch && !f.lastFetch.IsZero():
		f.caughtUp = f.lastFetch
	}
	f.logEnd = min(offset, leaderEnd)
	f.lastFetch, f.leaderEndAtLastFetch = now, leaderEnd
	advanced = ld.advanceLocked(leaderEnd)
	// Kafka's rule for joining the ISR: the follower has everything
	// committed, and everything of the leader's current epoch before it.
	if !slices.Contains(ld.isr, id) && !ld.proposing && f.logEnd >= ld.log.HighWatermark() && f.logEnd >= ld.epochStart && ld.mayJoinISR(id, f.brokerEpoch) {
		expand = append(slices.Clone(ld.isr), id)
	}
	return advanced, expand, nil
}

// mayJoinISR reports whether follower id, whose fetches carry brokerEpoch,
// is eligible for the ISR as this broker's snapshot says
// (meta.Broker.MayJoinISR: live, not in controlled shutdown, not fenced
// after an unclean shutdown, of that broker epoch), as the store would
// refuse to add it otherwise (meta.ErrIneligibleReplica): an ineligible
// follower still fetching is not proposed on every fetch it makes.
func (ld *leadership) mayJoinISR(id int32, brokerEpoch int64) bool {
	if ld.store == nil {
		return true
	}
	b, ok := ld.store.Snapshot().LiveBrokers()[id]
	return ok && b.MayJoinISR(brokerEpoch)
}

// laggingLocked is the ISR without the followers that have not caught up
// within lagMax; nil when none lags.
func (ld *leadership) laggingLocked(now time.Time, lagMax time.Duration) []int32 {
	var out []int32
	lagging := false
	for _, id := range ld.isr {
		if f, ok := ld.followers[id]; ok && now.Sub(f.caughtUp) > lagMax {
			lagging = true
			continue
		}
		out = append(out, id)
	}
	if !lagging {
		return nil
	}
	return out
}

// alterISR commits isr as the partition's in-sync set, on a goroutine of
// its own (the fetch that asked does not wait for the store), as Kafka's
// leader sends AlterPartition: a compare-and-swap on the leader epoch and
// partition epoch it holds. One change at a time; a refused one is
// proposed again on a later fetch or check.
func (ld *leadership) alterISR(isr []int32) {
	ld.mu.Lock()
	if ld.proposing || ld.store == nil {
		ld.mu.Unlock()
		return
	}
	ld.proposing = true
	expected := meta.PartitionRecord{LeaderEpoch: ld.epoch, PartitionEpoch: ld.partitionEpoch}
	cur := meta.PartitionRecord{Replicas: ld.replicas, ISR: ld.isr, ELR: ld.elr, LastKnownELR: ld.lastKnownELR, Leader: ld.self, LeaderEpoch: ld.epoch,
		AddingReplicas: ld.adding, RemovingReplicas: ld.removing}
	next := meta.WithLastKnownLeader(cur, cur.WithISR(isr, ld.minISR())) // a led partition has no last known leader
	// Each follower's broker epoch as its fetches said, for the store to
	// refuse adding one that has registered again since (KIP-903).
	epochs := make(map[int32]int64, len(ld.followers))
	for id, f := range ld.followers {
		epochs[id] = f.brokerEpoch
	}
	ld.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), alterISRTimeout)
		defer cancel()
		written, err := ld.store.AlterPartitionWithEpochs(ctx, ld.topic, ld.key.Topic, ld.key.Partition, expected, next, epochs)
		ld.mu.Lock()
		ld.proposing = false
		if err == nil && written.PartitionEpoch > ld.partitionEpoch {
			ld.counters.count(len(ld.isr), len(written.ISR))
			ld.isr, ld.partitionEpoch = written.ISR, written.PartitionEpoch
			ld.elr, ld.lastKnownELR = written.ELR, written.LastKnownELR
			ld.adding, ld.removing = written.AddingReplicas, written.RemovingReplicas
			ld.advanceLocked(ld.log.LogEndOffset())
		}
		ld.mu.Unlock()
		if err == nil {
			ld.delayed.Notify(ld.key) // acks=all waits see the new ISR and high watermark
		}
	}()
}

// alterISRTimeout bounds one ISR change's store transaction.
const alterISRTimeout = 10 * time.Second

// advanceLocked moves the high watermark to the smallest log end offset of
// the in-sync replicas (the leader's own is leaderEnd). A follower in the
// ISR that has not fetched in this epoch holds it where it is, and so does
// an ISR smaller than min.insync.replicas (or the replication factor, if
// smaller), as in Kafka 4 with eligible leader replicas.
func (ld *leadership) advanceLocked(leaderEnd int64) bool {
	if ld.minISR != nil && len(ld.isr) < min(ld.minISR(), len(ld.replicas)) {
		return false // under min ISR (KIP-966): what is written is not yet committed
	}
	hw := leaderEnd
	for _, id := range ld.isr {
		f, ok := ld.followers[id]
		if !ok {
			continue // the leader itself
		}
		if f.logEnd < 0 {
			return false
		}
		hw = min(hw, f.logEnd)
	}
	if hw <= ld.log.HighWatermark() {
		return false
	}
	_, err := ld.log.SetHighWatermark(hw)
	return err == nil
}

// onAppend is the leader's own log end moving: with every follower out
// of the ISR it alone commits.
func (ld *leadership) onAppend() {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	ld.advanceLocked(ld.log.LogEndOffset())
}

// shrinkLagging takes out of the ISR of every partition this broker leads
// the followers that have not caught up within lagMax
// (replica.lag.time.max.ms), as Kafka's leader does on its ISR check.
func (p *Partitions) shrinkLagging(now time.Time, lagMax time.Duration) {
	p.repl.mu.Lock()
	leading := make([]*leadership, 0, len(p.repl.leading))
	for _, ld := range p.repl.leading {
		leading = append(leading, ld)
	}
	p.repl.mu.Unlock()
	for _, ld := range leading {
		ld.mu.Lock()
		isr := ld.laggingLocked(now, lagMax)
		ld.mu.Unlock()
		if isr != nil {
			ld.alterISR(isr)
		}
	}
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for pt: after checking
// the asker's view of the current leader epoch (KIP-320), the largest
// epoch at most epoch in the leader's log and where it ends
// (storage.Log.EndOffsetForEpoch).
func (pt *Partition) EndOffsetForEpoch(currentLeaderEpoch, epoch int32) (int32, int64, error) {
	if err := pt.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	e, end := pt.log.EndOffsetForEpoch(epoch)
	return e, end, nil
}
