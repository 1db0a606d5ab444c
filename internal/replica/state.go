package replica

import (
	"errors"
	"slices"
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
	// Followers catch up by fetching and truncate through
	// OffsetForLeaderEpoch, never through ListOffsets.
	errFollowerListOffsets = &stateError{ErrNotLeader, "kbroker followers do not send ListOffsets; this one is refused"}
)

// PartitionState is one partition's replication as this broker sees it:
// which broker leads it, in which leader epoch, which brokers hold replicas
// and which of those are in sync. Handlers read it rather than knowing how
// many replicas there are. It comes from the partition's record in the
// metadata store (meta.PartitionRecord), with the brokers that are not
// live taken out.
type PartitionState struct {
	// Leader is the leading broker, -1 while it is not live (or the
	// partition has no leader).
	Leader      int32
	LeaderEpoch int32
	// PartitionEpoch is the version of the record this was built from.
	PartitionEpoch int32
	// Replicas are the brokers holding the partition, the preferred
	// leader first; ISR those in sync with the leader and live,
	// OfflineReplicas those not live. The slices may be shared with the
	// metadata snapshot: never modify them.
	Replicas, ISR, OfflineReplicas []int32
	// ELR and LastKnownELR are the eligible leader replicas and the last
	// known leader (KIP-966; meta.PartitionRecord), as recorded.
	ELR, LastKnownELR []int32
	// AddingReplicas and RemovingReplicas are the reassignment in
	// progress, as recorded: the leader's ISR changes carry them on.
	AddingReplicas, RemovingReplicas []int32
}

// noReplicas is the in-sync set of a partition none of whose in-sync
// replicas is live.
var noReplicas = []int32{}

// State is partition of t as snap gives it; live are the brokers serving.
// The caller has checked that the partition exists.
func (p *Partitions) State(snap *meta.Snapshot, t *meta.Topic, partition int32, live map[int32]*meta.Broker) PartitionState {
	st := p.recordedState(snap, t, partition)
	isLive := func(id int32) bool { _, ok := live[id]; return ok }
	if !isLive(st.Leader) {
		st.Leader = -1
	}
	if !allOf(st.ISR, isLive) {
		st.ISR = filtered(st.ISR, isLive)
	}
	if !allOf(st.Replicas, isLive) {
		st.OfflineReplicas = filtered(st.Replicas, func(id int32) bool { return !isLive(id) })
	}
	return st
}

// recordedState is the state of partition of t as its record has it,
// whether or not its brokers are live. A partition placed before placement
// was recorded is this broker's alone.
func (p *Partitions) recordedState(snap *meta.Snapshot, t *meta.Topic, partition int32) PartitionState {
	r := snap.Partition(t, partition)
	if len(r.Replicas) == 0 {
		return PartitionState{Leader: p.broker.NodeID, Replicas: p.self, ISR: p.self}
	}
	return PartitionState{Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch, Replicas: r.Replicas, ISR: r.ISR, ELR: r.ELR, LastKnownELR: r.LastKnownELR,
		AddingReplicas: r.AddingReplicas, RemovingReplicas: r.RemovingReplicas}
}

// IsReplica reports whether this broker holds a replica of partition of t.
func (p *Partitions) IsReplica(snap *meta.Snapshot, t *meta.Topic, partition int32) bool {
	return slices.Contains(p.recordedState(snap, t, partition).Replicas, p.broker.NodeID)
}

func allOf(ids []int32, ok func(int32) bool) bool {
	for _, id := range ids {
		if !ok(id) {
			return false
		}
	}
	return true
}

func filtered(ids []int32, keep func(int32) bool) []int32 {
	out := noReplicas
	for _, id := range ids {
		if keep(id) {
			out = append(out[:len(out):len(out)], id)
		}
	}
	return out
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

// FollowerListOffsets is the answer to a ListOffsets sent by another
// broker's replica.
func (p *Partitions) FollowerListOffsets() error { return errFollowerListOffsets }
