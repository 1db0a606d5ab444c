package replica

// The replication throttles (Kafka's ReplicationQuotaManager, KIP-73),
// set by kafka-reassign-partitions.sh --throttle: the leader answers a
// follower out of the ISR with no records for a partition its
// leader.replication.throttled.replicas names for this broker while the
// leader's quota (leader.replication.throttled.rate) is exceeded, and the
// follower leaves out of its fetch a partition it is not caught up on that
// follower.replication.throttled.replicas names for it while its own quota
// (follower.replication.throttled.rate) is. Both count every byte of
// their throttled partitions, in sync or not, so that the total stays
// within the rate, and neither holds back an in-sync replica: a caught-up
// follower stays in the ISR, and one catching up joins it only once it has
// caught up (recordFetch), however slowly the throttle lets it.

import (
	"math"
	"strconv"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/replquota"
)

// throttles are the two sides' quotas.
type throttles struct {
	leader, follower *replquota.Quota
}

const (
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
)

// registerThrottles makes the quotas, of the broker's
// replication.quota.window.* (static), and follows the dynamic configs
// that set them.
func (p *Partitions) registerThrottles(dyn *dynconfig.Configs) {
	snap := p.store.Snapshot()
	layers := dyn.Layers(snap, "")
	num := func(name string) int {
		n, _ := strconv.Atoi(config.BrokerValue(name, layers)) // the catalog checked it
		return n
	}
	samples, window := num("replication.quota.window.num"), time.Duration(num("replication.quota.window.size.seconds"))*time.Second
	p.throttle = throttles{leader: replquota.New(samples, window), follower: replquota.New(samples, window)}
	p.applyThrottles(dynconfig.Change{Snap: snap, Full: true})
	dyn.Register(config.ApplyReplicationQuotas, dynconfig.Applier{Apply: p.applyThrottles})
}

// applyThrottles puts a change of the rates or of topics' throttled
// replica lists into effect.
func (p *Partitions) applyThrottles(ch dynconfig.Change) {
	if ch.Full || len(ch.Keys) > 0 {
		layers := p.configs.dyn.Layers(ch.Snap, "")
		rate := func(name string) int64 {
			n, err := strconv.ParseInt(config.BrokerValue(name, layers), 10, 64)
			if err != nil {
				return math.MaxInt64
			}
			return n
		}
		p.throttle.leader.SetBound(rate(leaderThrottledRate))
		p.throttle.follower.SetBound(rate(followerThrottledRate))
	}
	topics := ch.Topics
	if ch.Full {
		topics = topics[:0:0]
		for name := range ch.Snap.AllTopics() {
			topics = append(topics, name)
		}
	}
	if len(topics) == 0 && !ch.Full {
		return
	}
	self := p.broker.NodeID
	leader, follower := map[string]replquota.Replicas{}, map[string]replquota.Replicas{}
	for _, name := range topics {
		cfg := ch.Snap.TopicConfig(name) // a deleted topic has none: no longer throttled
		leader[name] = replquota.ParseReplicas(cfg[leaderThrottledReplicas], self)
		follower[name] = replquota.ParseReplicas(cfg[followerThrottledReplicas], self)
	}
	p.throttle.leader.SetThrottled(leader, ch.Full)
	p.throttle.follower.SetThrottled(follower, ch.Full)
}

// leaderWithholds reports whether pt's leader answers follower replicaID
// with no records now: the partition is throttled on the leader's side,
// the follower is out of the ISR, and the leader's quota is exceeded
// (Kafka's ReplicaManager.shouldLeaderThrottle). throttled says whether
// its bytes count toward the quota.
func (pt *Partition) leaderWithholds(replicaID int32) (withhold, throttled bool) {
	q := pt.throttle
	if q == nil || !q.Throttled(pt.Topic, pt.Key.Partition) {
		return false, false
	}
	return !containsID(pt.ISR, replicaID) && q.Withhold(time.Now()), true
}

// CountReplicationBytesOut counts n record bytes sent to a follower, of
// which throttled were of partitions the leader's throttle names
// (FetchRead.ThrottledBytes): they count toward its quota.
func (p *Partitions) CountReplicationBytesOut(n, throttled int) {
	p.counters.bytesOut.Add(uint64(n))
	p.throttle.leader.Record(throttled, time.Now())
}

// ThrottleStats is the replication throttles' state, for the metrics.
type ThrottleStats struct {
	// LeaderByteRate and FollowerByteRate are the rates of each side's
	// throttled partitions now, in bytes per second (Kafka's
	// LeaderReplication and FollowerReplication byte-rate).
	LeaderByteRate, FollowerByteRate float64
	// LeaderWithheld and FollowerWithheld count the partition reads each
	// side left out while its quota was exceeded.
	LeaderWithheld, FollowerWithheld uint64
}

func (p *Partitions) throttleStats() ThrottleStats {
	now := time.Now()
	return ThrottleStats{LeaderByteRate: p.throttle.leader.Rate(now), FollowerByteRate: p.throttle.follower.Rate(now),
		LeaderWithheld: p.throttle.leader.Withheld(), FollowerWithheld: p.throttle.follower.Withheld()}
}
