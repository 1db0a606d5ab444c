package replica

import (
	"errors"
	"strconv"
	"strings"

	"kbroker/internal/meta"
)

// Errors of a partition's replication state. internal/api maps each to its
// Kafka error code; the messages are those Kafka sends.
var (
	// ErrNotLeader: this broker does not lead the partition (or a request
	// only a follower sends came while there are no followers).
	ErrNotLeader = errors.New("not the leader of the partition")
	// ErrFencedLeaderEpoch: the request's leader epoch is older than the
	// partition's (KIP-320): the client follows a leader since replaced.
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request's leader epoch is newer than the
	// partition's: this broker has not yet learnt of the new leader.
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")
	// ErrNotEnoughReplicas: an acks=all write to a partition whose in-sync
	// replicas are fewer than its min.insync.replicas.
	ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")
)

// stateError is one of the errors above with the message Kafka sends.
type stateError struct {
	kind error
	msg  string
}

func (e *stateError) Error() string { return e.msg }
func (e *stateError) Unwrap() error { return e.kind }

var (
	errFencedEpoch  = &stateError{ErrFencedLeaderEpoch, "The leader epoch in the request is older than the epoch on the broker."}
	errUnknownEpoch = &stateError{ErrUnknownLeaderEpoch, "The leader epoch in the request is newer than the broker's."}
	// Every partition has one replica, so no broker follows another and
	// the requests only a follower sends are refused.
	errFollowerFetch       = &stateError{ErrNotLeader, "kbroker partitions have a single replica; follower fetches are not served"}
	errFollowerListOffsets = &stateError{ErrNotLeader, "kbroker partitions have a single replica"}
)

// PartitionState is one partition's replication as this broker sees it:
// which broker leads it, in which leader epoch, which brokers hold replicas
// and which of those are in sync. Handlers read it rather than knowing how
// many replicas there are.
//
// Today every partition has exactly one replica, its leader: the leader
// epoch stays 0, and the in-sync set is the leader while it is live and
// empty when it is not (no other replica can take over). Replication
// changes how State builds this, not what reads it.
type PartitionState struct {
	// Leader is the leading broker, -1 while it is not live.
	Leader      int32
	LeaderEpoch int32
	// Replicas are the brokers holding the partition, the preferred
	// leader first; ISR those in sync with the leader, OfflineReplicas
	// those not live. The slices are shared with the metadata snapshot:
	// never modify them.
	Replicas, ISR, OfflineReplicas []int32
}

// MaxReplicationFactor is how many replicas a partition may have: one, its
// leader, until followers replicate it.
const MaxReplicationFactor = 1

// noReplicas is the in-sync set of a partition whose only replica is down.
var noReplicas = []int32{}

// State is partition of t as snap gives it; live are the brokers serving.
// The caller has checked that the partition exists.
func (p *Partitions) State(snap *meta.Snapshot, t *meta.Topic, partition int32, live map[int32]*meta.Broker) PartitionState {
	st := p.ledState(t, partition)
	if _, ok := live[st.Leader]; !ok {
		st.Leader, st.ISR, st.OfflineReplicas = -1, noReplicas, st.Replicas
	}
	return st
}

// ledState is the state of partition of t while its leader is live.
func (p *Partitions) ledState(t *meta.Topic, partition int32) PartitionState {
	replicas := p.self
	if int(partition) < len(t.Replicas) && len(t.Replicas[partition]) > 0 {
		replicas = t.Replicas[partition]
	}
	return PartitionState{Leader: replicas[0], LeaderEpoch: 0, Replicas: replicas, ISR: replicas}
}

// CheckLeaderEpoch compares the leader epoch a client sent (Fetch and
// ListOffsets current_leader_epoch) with the partition's, as KIP-320 asks:
// a client that is behind is fenced, one that is ahead is told to retry.
// -1 means the client does not know the epoch, and is not checked.
func (st PartitionState) CheckLeaderEpoch(epoch int32) error {
	switch {
	case epoch < 0 || epoch == st.LeaderEpoch:
		return nil
	case epoch < st.LeaderEpoch:
		return errFencedEpoch
	default:
		return errUnknownEpoch
	}
}

// CheckInSync refuses an acks=all write while fewer replicas are in sync
// than the topic's min.insync.replicas, as Kafka does before appending.
func (st PartitionState) CheckInSync(minInsync int, topic string, partition int32) error {
	if len(st.ISR) >= minInsync {
		return nil
	}
	return &stateError{ErrNotEnoughReplicas, "The size of the current ISR " + replicaSet(st.ISR) + " is insufficient to satisfy the min.isr requirement of " +
		strconv.Itoa(minInsync) + " for partition " + topic + "-" + strconv.Itoa(int(partition))}
}

// replicaSet writes broker ids as Kafka's messages show a set: Set(1, 2).
func replicaSet(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "Set(" + strings.Join(s, ", ") + ")"
}

// FollowerFetch is the answer to a Fetch sent by another broker's replica.
func (p *Partitions) FollowerFetch() error { return errFollowerFetch }

// FollowerListOffsets is the answer to a ListOffsets sent by another
// broker's replica.
func (p *Partitions) FollowerListOffsets() error { return errFollowerListOffsets }
