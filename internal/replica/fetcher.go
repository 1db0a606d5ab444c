package replica

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// The follower's side of replication: one replica fetcher per leader
// broker, as Kafka's ReplicaFetcherThread, sending that leader a Fetch
// with this broker's id as replica_state (replica_id before v15) for every
// partition this broker follows there, each from its log end offset, and
// appending what comes back with storage.Log.AppendAsFollower, offsets and
// leader epochs as the leader wrote them. The leader's high watermark in
// the answer becomes the follower's (never past its own log end).

// FetcherOptions are the replica.fetch.* settings.
type FetcherOptions struct {
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	MaxBytes          int32         // replica.fetch.response.max.bytes
	Backoff           time.Duration // replica.fetch.backoff.ms
	// LagMax is replica.lag.time.max.ms: a follower that has not caught up
	// for longer leaves the ISR of the partitions this broker leads.
	LagMax time.Duration
	// HWCheckpointInterval is replica.high.watermark.checkpoint.interval.ms:
	// how often the high watermarks are written to each log directory's
	// replication-offset-checkpoint (hw_checkpoint.go); 0 writes none.
	HWCheckpointInterval time.Duration
	// BrokerEpoch is the broker epoch of this broker's registration
	// (cluster.Member.BrokerEpoch), sent in every Fetch so that the leader
	// can tell this run's fetches from an earlier run's (KIP-903); 0: not
	// registered yet, and the fetchers wait (registered). nil: none, sent
	// as -1.
	BrokerEpoch func() int64
}

// LeaderClient returns a client of broker id at its inter-broker endpoint.
type LeaderClient func(snap *meta.Snapshot, id int32) (*kgo.Client, error)

// Fetchers runs the replica fetchers of this broker.
type Fetchers struct {
	p    *Partitions
	dial LeaderClient
	opts FetcherOptions

	mu       sync.Mutex
	byLeader map[int32]*fetcher

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// checkpoints ends when the final high-watermark checkpoint is
	// written, after the fetchers stopped appending.
	stopCheckpoints chan struct{}
	checkpoints     sync.WaitGroup
}

// fetcher is the fetcher of one leader broker.
type fetcher struct {
	leader int32
	wake   chan struct{}
	// leaderBehind is set, by the fetcher's own goroutine, when the leader
	// refused a partition because it has not applied the partition record
	// that made it leader yet (see leaderBehindError).
	leaderBehind bool

	mu    sync.Mutex
	parts map[Key]*followed
}

// followed is one partition a fetcher copies.
type followed struct {
	topic       string
	id          meta.TopicID
	partition   int32
	leaderEpoch int32
	log         *storage.Log
	// checked is set once the log has been cut back to where it agrees
	// with this leader's (truncate); until then nothing is fetched.
	checked bool
	// askEpoch, when asking is set, is the epoch the next truncation
	// round asks the leader about: one round found that this replica
	// never had the epoch the leader answered with (truncationRound).
	askEpoch int32
	asking   bool
	// lag is the leader's high watermark in the last answer minus this
	// log's end then (Stats.MaxLag).
	lag atomic.Int64
	// inSync is set while the last answer left this replica with the
	// leader's high watermark (Kafka's PartitionFetchState
	// isReplicaInSync): the follower's throttle never holds it back.
	inSync bool
}

// StartFetchers starts following: now, and again whenever the metadata
// says which broker leads what (on a reconciler's goroutine, since it
// opens logs).
func (p *Partitions) StartFetchers(dial LeaderClient, opts FetcherOptions) *Fetchers {
	f := &Fetchers{p: p, dial: dial, opts: opts, byLeader: map[int32]*fetcher{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.sync(p.store.Snapshot())
	f.stopCheckpoints = make(chan struct{})
	if opts.HWCheckpointInterval > 0 {
		f.checkpoints.Go(func() { p.RunHWCheckpoints(opts.HWCheckpointInterval, f.stopCheckpoints) })
	}
	if opts.LagMax > 0 {
		f.wg.Go(func() {
			tick := time.NewTicker(opts.LagMax / 2)
			defer tick.Stop()
			for {
				select {
				case <-f.ctx.Done():
					return
				case now := <-tick.C:
					p.shrinkLagging(now, opts.LagMax)
				}
			}
		})
	}
	p.store.Reconcile(func(ev meta.Event) {
		if ev.Full || len(ev.ChangedTopics()) > 0 || len(ev.ChangedPartitions()) > 0 || ev.ChangedBrokers() {
			f.sync(ev.Cur)
		}
	})
	return f
}

// Close stops every fetcher and waits for them, then writes the
// high-watermark checkpoint a last time.
func (f *Fetchers) Close() {
	f.cancel()
	f.wg.Wait()
	close(f.stopCheckpoints)
	f.checkpoints.Wait()
}

// sync gives each fetcher the partitions this broker follows from its
// leader in snap: those it holds a replica of and another live broker
// leads.
func (f *Fetchers) sync(snap *meta.Snapshot) {
	self := f.p.broker.NodeID
	live := snap.LiveBrokers()
	want := map[int32]map[Key]*followed{}
	for _, t := range snap.AllTopics() {
		for i := int32(0); i < t.Partitions; i++ {
			st := f.p.recordedState(snap, t, i)
			if st.Leader == self && len(st.Replicas) == 1 {
				// Led here alone now (a reassignment down to this
				// replica): the appends commit again, without waiting
				// for a request to lead it.
				if l := f.p.logs.Get(t.Name, i); l != nil && l.Replicated() {
					f.p.leadAlone(Key{t.ID, i}, l)
				}
				continue
			}
			if _, ok := live[st.Leader]; !ok || st.Leader == self || len(st.Replicas) < 2 || !containsID(st.Replicas, self) {
				continue
			}
			l, err := f.p.Log(snap, t, i)
			if err != nil {
				f.p.log.Error("opening a followed partition", "topic", t.Name, "partition", i, "err", err)
				continue
			}
			key := Key{t.ID, i}
			if f.p.forget(key) { // no longer led here
				// acks=all produces waiting on it answer
				// NOT_LEADER_OR_FOLLOWER now (AwaitCommitted).
				f.p.delayed.Notify(key)
			}
			l.SetReplicated(true)
			if want[st.Leader] == nil {
				want[st.Leader] = map[Key]*followed{}
			}
			want[st.Leader][key] = &followed{topic: t.Name, id: t.ID, partition: i, leaderEpoch: st.LeaderEpoch, log: l}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return
	}
	for leader, ft := range f.byLeader {
		if want[leader] == nil {
			ft.set(nil)
		}
	}
	for leader, parts := range want {
		ft := f.byLeader[leader]
		if ft == nil {
			ft = &fetcher{leader: leader, wake: make(chan struct{}, 1)}
			f.byLeader[leader] = ft
			f.wg.Go(func() { f.run(ft) })
		}
		ft.set(parts)
	}
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// set replaces the fetcher's partitions and wakes it. A partition it
// already follows in the same leader epoch keeps its truncation check.
func (ft *fetcher) set(parts map[Key]*followed) {
	ft.mu.Lock()
	for k, fp := range parts {
		if old := ft.parts[k]; old != nil && old.leaderEpoch == fp.leaderEpoch && old.log == fp.log {
			parts[k] = old
		}
	}
	ft.parts = parts
	ft.mu.Unlock()
	select {
	case ft.wake <- struct{}{}:
	default:
	}
}

func (ft *fetcher) partitions() map[Key]*followed {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.parts
}

// run fetches from the leader until the broker closes, idling while it
// follows nothing there.
func (f *Fetchers) run(ft *fetcher) {
	for f.ctx.Err() == nil {
		parts := ft.partitions()
		if len(parts) == 0 {
			select {
			case <-f.ctx.Done():
			case <-ft.wake:
			}
			continue
		}
		if !f.registered() {
			select {
			case <-f.ctx.Done():
			case <-time.After(leaderBehindBackoff):
			}
			continue
		}
		ft.leaderBehind = false
		checked := f.truncate(ft, parts)
		if checked && ft.leaderBehind {
			// A partition's epoch check waits on the new leader: ask
			// again soon rather than after a long-polling fetch of the
			// others (replica.fetch.wait.max.ms).
			select {
			case <-f.ctx.Done():
			case <-ft.wake:
			case <-time.After(leaderBehindBackoff):
			}
			continue
		}
		if !checked || !f.fetchOnce(ft, parts) {
			backoff := f.opts.Backoff
			if ft.leaderBehind {
				// The new leader's metadata is a moment behind this
				// broker's: retry soon, or acks=all produces to it would
				// wait out a whole replica.fetch.backoff.ms after every
				// election.
				backoff = min(backoff, leaderBehindBackoff)
			}
			select {
			case <-f.ctx.Done():
			case <-ft.wake:
			case <-time.After(backoff):
			}
		}
	}
}

// registered reports whether this broker has a broker epoch to send, or
// needs none (no BrokerEpoch: tests of the fetcher alone). Until it has
// registered it does not fetch, as Kafka's replica fetchers start only
// once the broker is registered: a fetch sent with no epoch could be taken
// for one of the previous run, whose registration stays live until its
// lease expires, and take this run into an ISR on the strength of it.
func (f *Fetchers) registered() bool {
	return f.opts.BrokerEpoch == nil || f.opts.BrokerEpoch() > 0
}

// leaderBehindBackoff is the pause before asking again a leader that
// refused a partition only because it has not yet applied its election.
const leaderBehindBackoff = 20 * time.Millisecond

// leaderBehindError reports whether a partition refused with code can be
// the leader not having applied its leadership yet: this broker learnt of
// the election first. A leader that has not applied the creation of the
// topic answers a fetch by topic id (v13+) with UNKNOWN_TOPIC_ID, and by
// name UNKNOWN_TOPIC_OR_PARTITION. Any other error waits
// replica.fetch.backoff.ms.
func leaderBehindError(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		return true
	}
	return false
}

// requestTwice sends req to the leader and, if that fails, once more at
// once: a leader that restarted leaves the client a dead connection, whose
// first request fails (EOF) while the next dials the new process, and a
// follower that backed off replica.fetch.backoff.ms for it would hold
// acks=all produces to that leader as long.
func requestTwice[R kmsg.Response](ctx context.Context, to *kgo.Broker, req interface {
	RequestWith(context.Context, kmsg.Requestor) (R, error)
}) (R, error) {
	resp, err := req.RequestWith(ctx, to)
	if err != nil && ctx.Err() == nil {
		resp, err = req.RequestWith(ctx, to)
	}
	return resp, err
}

// fetchOnce sends one Fetch for parts and applies the answer; false asks
// for a backoff (the leader could not be reached, or refused a partition).
func (f *Fetchers) fetchOnce(ft *fetcher, parts map[Key]*followed) bool {
	snap := f.p.store.Snapshot()
	cl, err := f.dial(snap, ft.leader)
	if err != nil {
		f.p.log.Debug("replica fetcher: no client for the leader", "leader", ft.leader, "err", err)
		return false
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return false
	}
	self := f.p.broker.NodeID
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = self
	req.ReplicaState.ID, req.ReplicaState.Epoch = self, -1
	if f.opts.BrokerEpoch != nil {
		req.ReplicaState.Epoch = f.opts.BrokerEpoch() // registered: run checked it
	}
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(f.opts.MaxWait/time.Millisecond), f.opts.MinBytes, f.opts.MaxBytes
	req.SessionID, req.SessionEpoch = 0, -1 // a full fetch every time: no fetch session
	byTopic := map[meta.TopicID]int{}
	throttle := f.p.throttle.follower
	for _, fp := range parts {
		if !fp.checked {
			continue
		}
		if !fp.inSync && throttle.Throttled(fp.topic, fp.partition) && throttle.Withhold(time.Now()) {
			continue // the follower's replication throttle (throttle.go)
		}
		i, ok := byTopic[fp.id]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.id] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = fp.topic, fp.id
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = fp.partition, fp.leaderEpoch
		rp.FetchOffset, rp.LogStartOffset, rp.LastFetchedEpoch = fp.log.LogEndOffset(), fp.log.LogStartOffset(), -1
		rp.PartitionMaxBytes = f.opts.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return false
	}
	resp, err := requestTwice(f.ctx, seeds[0], req)
	if err != nil {
		if f.ctx.Err() == nil {
			f.p.log.Debug("replica fetcher: fetch failed", "leader", ft.leader, "err", err)
		}
		return false
	}
	if resp.ErrorCode != 0 {
		f.p.log.Warn("replica fetcher: fetch refused", "leader", ft.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
		return false
	}
	ok := true
	now := time.Now()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fp := findFollowed(parts, rt, rp.Partition)
			if fp == nil {
				continue
			}
			if rp.ErrorCode == kerr.OffsetOutOfRange.Code && rp.LogStartOffset > fp.log.LogEndOffset() {
				// The leader deleted every record this replica lacks
				// (DeleteRecords, retention): start again from its start.
				f.p.log.Info("replica fetcher: the leader's log starts past this replica's end; starting over there", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader, "log_end", fp.log.LogEndOffset(), "leader_log_start", rp.LogStartOffset)
				if err := fp.log.TruncateFullyAndStartAt(rp.LogStartOffset); err != nil {
					f.p.log.Error("replica fetcher: emptying the log", "topic", fp.topic, "partition", fp.partition, "err", err)
					ok = false
				}
				continue
			}
			if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
				// This replica's log runs past the leader's: check again
				// where they agree, and cut the rest.
				f.p.log.Warn("replica fetcher: this replica's log runs past the leader's", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader, "log_end", fp.log.LogEndOffset())
				fp.checked = false
				ok = false
				continue
			}
			if rp.ErrorCode != 0 {
				// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and the like:
				// the metadata will move the partition; until then, back off.
				f.p.log.Debug("replica fetcher: partition refused", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader, "err", kerr.ErrorForCode(rp.ErrorCode))
				ft.leaderBehind = ft.leaderBehind || leaderBehindError(rp.ErrorCode)
				ok = false
				continue
			}
			if len(rp.RecordBatches) > 0 {
				if _, err := fp.log.AppendAsFollower(rp.RecordBatches, now); err != nil {
					f.p.log.Warn("replica fetcher: append refused", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader, "err", err)
					ok = false
					continue
				}
				f.p.counters.bytesIn.Add(uint64(len(rp.RecordBatches)))
				if throttle.Throttled(fp.topic, fp.partition) {
					throttle.Record(len(rp.RecordBatches), now)
				}
			}
			if rp.HighWatermark >= 0 {
				fp.log.SetHighWatermark(rp.HighWatermark) // clamped to this log's end
				fp.lag.Store(max(rp.HighWatermark-fp.log.LogEndOffset(), 0))
				fp.inSync = fp.log.LogEndOffset() >= rp.HighWatermark
			}
			if err := followLogStart(fp.log, rp.LogStartOffset); err != nil {
				f.p.log.Warn("replica fetcher: moving the log start offset", "topic", fp.topic, "partition", fp.partition, "leader_log_start", rp.LogStartOffset, "err", err)
			}
		}
	}
	return ok
}

// findFollowed is the followed partition an answer's partition is of: by
// topic id (Fetch v13+) or name.
func findFollowed(parts map[Key]*followed, rt kmsg.FetchResponseTopic, partition int32) *followed {
	if rt.TopicID != ([16]byte{}) {
		return parts[Key{meta.TopicID(rt.TopicID), partition}]
	}
	for _, fp := range parts {
		if fp.topic == rt.Topic && fp.partition == partition {
			return fp
		}
	}
	return nil
}

// truncate cuts the logs of the partitions not yet checked against this
// leader back to where they agree with its log, as Kafka's follower does
// after a leader change (KIP-101, KIP-279): it asks the leader, with
// OffsetForLeaderEpoch, where the latest epoch of its own log ends there;
// the leader answers with that epoch (or the largest it has below it) and
// its end, and the follower keeps its records up to the smaller of that
// end and the end of the same epoch in its own log — over as many rounds
// as it takes (truncationRound), at most maxTruncationRounds before the
// next fetch. It reports false when the leader could not be asked; a
// partition refused stays unchecked.
func (f *Fetchers) truncate(ft *fetcher, parts map[Key]*followed) bool {
	for range maxTruncationRounds {
		ok, again := f.truncateOnce(ft, parts)
		if !ok {
			return false
		}
		if !again {
			break
		}
	}
	return true
}

// maxTruncationRounds bounds the rounds of one truncate call: each round
// asks about an older epoch, so a log that diverged over many leader
// changes goes on in the fetcher's next iteration.
const maxTruncationRounds = 16

// truncateOnce is one OffsetForLeaderEpoch round for the partitions not
// yet checked; again reports that one of them needs another round.
func (f *Fetchers) truncateOnce(ft *fetcher, parts map[Key]*followed) (ok, again bool) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.p.broker.NodeID
	byTopic := map[string]int{}
	asked := map[Key]*followed{}
	for k, fp := range parts {
		if fp.checked {
			continue
		}
		latest := fp.log.LatestEpoch()
		if latest < 0 {
			fp.checked = true // nothing written: nothing to cut
			continue
		}
		if fp.asking {
			latest = min(latest, fp.askEpoch)
		}
		i, ok := byTopic[fp.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = fp.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = fp.partition, fp.leaderEpoch, latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[k] = fp
	}
	if len(asked) == 0 {
		return true, false
	}
	cl, err := f.dial(f.p.store.Snapshot(), ft.leader)
	if err != nil {
		return false, false
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return false, false
	}
	resp, err := requestTwice(f.ctx, seeds[0], req)
	if err != nil {
		return false, false
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			var fp *followed
			for _, c := range asked {
				if c.topic == rt.Topic && c.partition == rp.Partition {
					fp = c
				}
			}
			if fp == nil {
				continue
			}
			if rp.ErrorCode != 0 {
				f.p.log.Debug("replica fetcher: epoch check refused", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader, "err", kerr.ErrorForCode(rp.ErrorCode))
				ft.leaderBehind = ft.leaderBehind || leaderBehindError(rp.ErrorCode)
				continue
			}
			end, done, next := truncationRound(fp.log, rp.LeaderEpoch, rp.EndOffset)
			if end < fp.log.LogEndOffset() {
				f.p.log.Info("truncating a follower's log to agree with its leader", "topic", fp.topic, "partition", fp.partition, "leader", ft.leader,
					"from", fp.log.LogEndOffset(), "to", end, "leader_epoch", rp.LeaderEpoch)
				if err := fp.log.TruncateTo(end); err != nil {
					f.p.log.Error("truncating a follower's log", "topic", fp.topic, "partition", fp.partition, "err", err)
					continue
				}
			}
			fp.checked, fp.asking, fp.askEpoch = done, !done, next
			again = again || !done
		}
	}
	return true, again
}

// truncationRound is one round of a follower's truncation (Kafka's
// AbstractFetcherThread.getOffsetTruncationState): given the leader's
// answer to OffsetForLeaderEpoch (its largest epoch at most the one asked
// and where that epoch ends in its log), it returns the offset to cut l
// back to, and whether the logs then agree (done) or another round must
// ask about next. When l never had the leader's epoch (its own largest
// epoch at most that one is older), its records of that older epoch may
// differ from the leader's: it cuts them at its own end of that epoch and
// asks again about it, so a log that diverged over several leader changes
// is cut back where it really agrees, not where a single round guessed.
// A leader without an epoch at or below the one asked (UNDEFINED) leaves
// what is committed, the high watermark, as Kafka does.
func truncationRound(l *storage.Log, leaderEpoch int32, leaderEnd int64) (end int64, done bool, next int32) {
	logEnd := l.LogEndOffset()
	if leaderEpoch < 0 || leaderEnd < 0 {
		return min(l.HighWatermark(), logEnd), true, -1
	}
	ownEpoch, ownEnd := l.EndOffsetForEpoch(leaderEpoch)
	if ownEpoch < 0 || ownEnd < 0 {
		return min(l.HighWatermark(), logEnd), true, -1
	}
	if ownEpoch != leaderEpoch {
		return min(ownEnd, logEnd), false, ownEpoch
	}
	return min(leaderEnd, ownEnd, logEnd), true, -1
}
