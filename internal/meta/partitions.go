package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/benbjohnson/immutable"
)

// Partition state. Each partition's replication (replicas, in-sync set,
// leader, leader epoch, partition epoch) is a record of its own,
// partitions/<topic id>/<partition>, as Kafka's PartitionRecord is, so that
// the leader shrinking one partition's ISR rewrites that partition and
// nothing else. A partition without a record is in its initial state:
// every replica of its topic's assignment in sync, the first one leading,
// both epochs 0. Records are written only by AlterPartition, a
// compare-and-swap on the partition epoch (and, for a leader, its leader
// epoch), as Kafka's AlterPartition fences a stale leader.
//
// The key holds the topic id, not its name, so the records of a deleted
// topic can never be read as those of a topic recreated under its name.

const prefixPartitions = "partitions/"

// PartitionRecord is one partition's replication state.
type PartitionRecord struct {
	// Replicas are the brokers holding the partition, the preferred
	// leader first.
	Replicas []int32 `json:"replicas"`
	// ISR are the replicas in sync with the leader (the leader included).
	ISR []int32 `json:"isr"`
	// Leader is the leading broker; -1: none (no eligible replica).
	Leader      int32 `json:"leader"`
	LeaderEpoch int32 `json:"leader_epoch"`
	// PartitionEpoch counts every change of the record: the version the
	// compare-and-swap of AlterPartition compares.
	PartitionEpoch int32 `json:"partition_epoch"`
	// ELR are the eligible leader replicas (KIP-966): replicas that left
	// the ISR while it was below min.insync.replicas, and so hold every
	// committed record (elr.go). LastKnownELR is the last leader of a
	// partition left without ISR.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// AddingReplicas and RemovingReplicas are a reassignment in progress,
	// as in Kafka's PartitionRecord: Replicas is then the target followed
	// by the replicas being removed, and the adding ones are among them,
	// catching up as followers until the controller completes it.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (r PartitionRecord) Reassigning() bool {
	return len(r.AddingReplicas) > 0 || len(r.RemovingReplicas) > 0
}

// PartitionKey names one partition of a topic by the topic's id.
type PartitionKey struct {
	Topic     TopicID
	Partition int32
}

func partitionKey(id TopicID, p int32) string {
	return prefixPartitions + id.String() + "/" + strconv.Itoa(int(p))
}

// PartitionsDelta holds the partition records a batch wrote; nil: deleted.
type PartitionsDelta map[PartitionKey]*PartitionRecord

type partitionKeyHasher struct{}

func (partitionKeyHasher) Hash(k PartitionKey) uint32 {
	return uint32(maphash.Comparable(hashSeed, k))
}
func (partitionKeyHasher) Equal(a, b PartitionKey) bool { return a == b }

var partitionsKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		rest, ok := strings.CutPrefix(c.Key, prefixPartitions)
		if !ok {
			return false, nil
		}
		idText, pText, ok := strings.Cut(rest, "/")
		var k PartitionKey
		if !ok || k.Topic.UnmarshalText([]byte(idText)) != nil {
			return true, nil // not a partition record: ignored
		}
		p, err := strconv.ParseInt(pText, 10, 32)
		if err != nil || p < 0 {
			return true, nil
		}
		k.Partition = int32(p)
		var r *PartitionRecord
		if !c.Deleted {
			r = new(PartitionRecord)
			if err := json.Unmarshal(c.Value, r); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
		}
		setDelta(&d.Partitions, k, r)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		if len(d.Partitions) > 0 {
			next.partitions = persistentWith(next.partitions, partitionKeyHasher{}, d.Partitions, func(r *PartitionRecord) bool { return r == nil })
		}
	},
	merge: func(d, later *Delta) { mergeInto(&d.Partitions, later.Partitions) },
}

// InitialPartition is the state of partition p of t before any change: its
// assigned replicas all in sync, the first leading. A partition placed
// before placement was recorded has no replicas (its reader substitutes
// itself).
func InitialPartition(t *Topic, p int32) PartitionRecord {
	var replicas []int32
	if int(p) < len(t.Replicas) {
		replicas = t.Replicas[p]
	}
	r := PartitionRecord{Replicas: replicas, ISR: replicas, Leader: -1}
	if len(replicas) > 0 {
		r.Leader = replicas[0]
	}
	return r
}

// Partition is the state of partition p of t: its record, or the initial
// state if it has none. The slices are shared: never modify them.
func (s *Snapshot) Partition(t *Topic, p int32) PartitionRecord {
	if r := getFrom(s.partitions, PartitionKey{t.ID, p}); r != nil {
		return *r
	}
	return InitialPartition(t, p)
}

// Leader is the leader of partition p of t as its record says (-1: none);
// self for a partition placed before placement was recorded. It follows
// elections and reassignments, which Topic.Replicas (the creation
// assignment) never does.
func (s *Snapshot) Leader(t *Topic, p, self int32) int32 {
	r := s.Partition(t, p)
	if len(r.Replicas) == 0 {
		return self
	}
	return r.Leader
}

// ChangedPartitions lists the partitions whose records changed.
func (e Event) ChangedPartitions() []PartitionKey { return keysOf(e.delta().Partitions) }

// Errors of AlterPartition, mapped by the caller to Kafka's codes.
var (
	// ErrFencedLeaderEpoch: the change was computed by a leader whose
	// epoch is no longer the partition's (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("meta: the leader epoch is no longer the partition's")
	// ErrPartitionChanged: the record changed since it was read
	// (INVALID_UPDATE_VERSION): read it again and start over.
	ErrPartitionChanged = errors.New("meta: the partition state changed since it was read")
	// ErrUnknownPartition: the topic (with that id) or the partition does
	// not exist.
	ErrUnknownPartition = errors.New("meta: unknown partition")
	// ErrIneligibleReplica: the change adds to the ISR a broker that is
	// not live, is in controlled shutdown, is still fenced after an
	// unclean shutdown, or has registered again since the proposer saw
	// it fetch (a stale broker epoch): INELIGIBLE_REPLICA, as Kafka's
	// controller refuses such an AlterPartition (KIP-903).
	ErrIneligibleReplica = errors.New("meta: a replica added to the ISR is not eligible")
)

// AlterPartition replaces the state of partition p of topic (whose id must
// be id) with next, if the stored state is still at expected's leader epoch
// and partition epoch; next's partition epoch is set to one past the
// stored one. It returns the record written, once this store's snapshot
// includes it. The compare is made inside the store's transaction, so on
// etcd it is a compare-and-swap on the record's revision: of two brokers
// altering from the same state, one wins and the other gets
// ErrPartitionChanged (or ErrFencedLeaderEpoch). next is written whole,
// its reassignment fields included: a writer passes on those of the
// record it read (a leader's ISR change carries the reassignment in
// progress), and a completion that keeps the replicas (one that only
// added replicas) ends the reassignment by clearing them.
func (s *Store) AlterPartition(ctx context.Context, topic string, id TopicID, p int32, expected, next PartitionRecord) (PartitionRecord, error) {
	return s.AlterPartitionWithEpochs(ctx, topic, id, p, expected, next, nil)
}

// AlterPartitionWithEpochs is AlterPartition for a leader's ISR change,
// which names with each replica it adds the broker epoch of the fetches
// that made it eligible (Kafka's AlterPartition v3+ NewIsrWithEpochs): the
// change is refused with ErrIneligibleReplica if that replica's broker
// has registered again since, so a fetch of an earlier run of the broker
// (parked at the leader while the broker restarted) never takes the new
// run into the ISR. A replica without an epoch in brokerEpochs, or with
// -1, is not checked for one, as Kafka skips the check for -1.
func (s *Store) AlterPartitionWithEpochs(ctx context.Context, topic string, id TopicID, p int32, expected, next PartitionRecord, brokerEpochs map[int32]int64) (PartitionRecord, error) {
	var written PartitionRecord
	err := s.Update(ctx, func(tx Tx) error {
		var err error
		written, err = alterPartitionTx(tx, topic, id, p, expected, next, brokerEpochs)
		return err
	})
	if err != nil {
		return PartitionRecord{}, err
	}
	return written, nil
}

// alterPartitionTx is AlterPartition's compare and write inside tx.
func alterPartitionTx(tx Tx, topic string, id TopicID, p int32, expected, next PartitionRecord, brokerEpochs map[int32]int64) (PartitionRecord, error) {
	raw, ok := tx.Get(topicKey(topic))
	if !ok {
		return PartitionRecord{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	var t Topic
	if err := json.Unmarshal(raw, &t); err != nil {
		return PartitionRecord{}, err
	}
	if t.ID != id || p < 0 || p >= t.Partitions {
		return PartitionRecord{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	cur := InitialPartition(&t, p)
	if raw, ok := tx.Get(partitionKey(id, p)); ok {
		// Decoded into a fresh record: the initial one's slices are the
		// topic's assignment, shared by Replicas and ISR, which decoding
		// into them would overwrite.
		cur = PartitionRecord{}
		if err := json.Unmarshal(raw, &cur); err != nil {
			return PartitionRecord{}, err
		}
	}
	switch {
	case cur.LeaderEpoch != expected.LeaderEpoch:
		return PartitionRecord{}, fmt.Errorf("%w: %s-%d is at leader epoch %d, not %d", ErrFencedLeaderEpoch, topic, p, cur.LeaderEpoch, expected.LeaderEpoch)
	case cur.PartitionEpoch != expected.PartitionEpoch:
		return PartitionRecord{}, fmt.Errorf("%w: %s-%d is at partition epoch %d, not %d", ErrPartitionChanged, topic, p, cur.PartitionEpoch, expected.PartitionEpoch)
	}
	if err := checkISRAdditions(tx, cur, next, brokerEpochs); err != nil {
		return PartitionRecord{}, fmt.Errorf("%w (%s-%d)", err, topic, p)
	}
	written := next
	written.Replicas, written.ISR = slices.Clone(next.Replicas), slices.Clone(next.ISR)
	written.AddingReplicas, written.RemovingReplicas = slices.Clone(next.AddingReplicas), slices.Clone(next.RemovingReplicas)
	written.ELR, written.LastKnownELR = slices.Clone(next.ELR), slices.Clone(next.LastKnownELR)
	written.PartitionEpoch = cur.PartitionEpoch + 1
	putJSON(tx, partitionKey(id, p), written)
	return written, nil
}

// checkISRAdditions refuses a change that adds to the ISR a broker that is
// not eligible (Kafka's ReplicationControlManager.ineligibleReplicasForIsr):
// its registration is gone, or in controlled shutdown, or still marked
// UncleanShutdown (Kafka keeps such a broker fenced until its registration
// is processed, and the controller would take it out again at once), or
// of another broker epoch than the one brokerEpochs names for it. A
// follower that is stopping may still fetch, caught up, after the
// controller took it out of the ISR; let back in, it would stay there once
// gone, and a later election would count it among the replicas holding
// every committed record (or put it in the ELR) when it holds none written
// since. The registration is read inside the transaction, so on etcd the
// write fails if the broker's state changes under it. Only additions are
// checked: a replica already in the ISR is taken out by the controller
// when it stops, and the check must not hold up a shrink.
func checkISRAdditions(tx Tx, cur, next PartitionRecord, brokerEpochs map[int32]int64) error {
	for _, id := range next.ISR {
		if slices.Contains(cur.ISR, id) {
			continue
		}
		raw, ok := tx.Get(BrokerKey(id))
		if !ok {
			return fmt.Errorf("%w: broker %d is not live", ErrIneligibleReplica, id)
		}
		var b Broker
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		if why := b.ineligibility(brokerEpochs[id]); why != "" {
			return fmt.Errorf("%w: broker %d %s", ErrIneligibleReplica, id, why)
		}
	}
	return nil
}

// MayJoinISR reports whether the broker of this registration may be added
// to an ISR on the strength of fetches made with fetchEpoch (its broker
// epoch as its fetches said; -1 or 0: unknown, not checked). The leader
// asks before proposing, the store's AlterPartitionWithEpochs again when
// writing.
func (b *Broker) MayJoinISR(fetchEpoch int64) bool { return b.ineligibility(fetchEpoch) == "" }

// ineligibility says why the broker may not join an ISR ("": it may).
func (b *Broker) ineligibility(fetchEpoch int64) string {
	switch {
	case b.InControlledShutdown:
		return "is in controlled shutdown"
	case b.UncleanShutdown:
		return "is fenced until the controller has processed its unclean shutdown"
	case fetchEpoch > 0 && b.Epoch > 0 && fetchEpoch != b.Epoch:
		return fmt.Sprintf("has registered again: broker epoch mismatch: requested=%d VS expected=%d", fetchEpoch, b.Epoch)
	}
	return ""
}

// PartitionChange is one compare-and-swap of AlterPartitions.
type PartitionChange struct {
	Topic          string
	ID             TopicID
	Partition      int32
	Expected, Next PartitionRecord
}

// AlterPartitions makes every change in one transaction, each compared as
// AlterPartition compares it, so that readers see them all at once (a
// controlled shutdown moves all of a broker's leaderships together, and a
// client needs one metadata refresh). A change whose compare fails is left
// out, with its error at its index; the others are written. Callers keep a
// batch within etcd's --max-txn-ops: each change reads and writes one key.
func (s *Store) AlterPartitions(ctx context.Context, changes []PartitionChange) ([]error, error) {
	errs := make([]error, len(changes))
	err := s.Update(ctx, func(tx Tx) error {
		for i, c := range changes {
			_, errs[i] = alterPartitionTx(tx, c.Topic, c.ID, c.Partition, c.Expected, c.Next, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// maxPartitionDeletesPerTx bounds the partition records one cleanup
// transaction deletes, under etcd's default --max-txn-ops (128).
const maxPartitionDeletesPerTx = 100

// deletePartitionRecords removes the partition records of a deleted topic,
// a bounded transaction at a time. They are keyed by the topic's id, so
// ones left behind by a failure are never read as another topic's; this
// only keeps the store from growing.
func (s *Store) deletePartitionRecords(ctx context.Context, id TopicID) error {
	prefix := prefixPartitions + id.String() + "/"
	for {
		more := false
		err := s.Update(ctx, func(tx Tx) error {
			n := 0
			more = false
			for k := range tx.List(prefix) {
				if n == maxPartitionDeletesPerTx {
					more = true
					break
				}
				tx.Delete(k)
				n++
			}
			return nil
		})
		if err != nil || !more {
			return err
		}
	}
}

// partitionsImage is the type of Snapshot.partitions: a persistent map, so
// one ISR change copies a few trie nodes, not every partition.
type partitionsImage = *immutable.Map[PartitionKey, *PartitionRecord]
