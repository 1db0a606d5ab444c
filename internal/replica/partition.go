package replica

import (
	"errors"
	"fmt"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/replquota"
	"kbroker/internal/storage"
)

// Key names a partition across topic recreations: a topic deleted and
// created again under its name has a new id, and so new keys.
type Key struct {
	Topic     meta.TopicID
	Partition int32
}

// Partition is a partition this broker leads, as one request sees it: its
// replication state and its log. Lead returns one; it is a small value,
// valid for the request.
type Partition struct {
	// First, beside the leader epoch (PartitionState's first fields): what a
	// fetch of an idle partition reads, in one cache line of a Partition
	// kept across fetches (a fetch session's), not the fourth.
	log *storage.Log
	PartitionState
	Key   Key
	Topic string

	delayed *DelayedQueue[Key]
	// leader is set when the partition has followers (leader.go).
	leader *leadership
	// throttle is the leader's replication quota (throttle.go).
	throttle *replquota.Quota
}

// Replicated reports whether the partition has followers, whose fetches
// move its high watermark.
func (pt *Partition) Replicated() bool { return pt.leader != nil }

// Lead returns partition of t for a request its leader must serve, opening
// the log if needed; ErrNotLeader when another broker leads it. The caller
// has checked that the partition exists in snap.
func (p *Partitions) Lead(snap *meta.Snapshot, t *meta.Topic, partition int32) (Partition, error) {
	st := p.recordedState(snap, t, partition)
	if self := p.broker.NodeID; st.Leader != self {
		return Partition{}, &stateError{ErrNotLeader, fmt.Sprintf("Broker %d is not the leader of %s-%d; broker %d is.", self, t.Name, partition, st.Leader)}
	}
	l, err := p.Log(snap, t, partition)
	if errors.Is(err, meta.ErrUnknownTopic) || errors.Is(err, ErrNotLeader) {
		return Partition{}, err // deleted or reassigned away since snap
	}
	if err != nil {
		return Partition{}, fmt.Errorf("%w: %v", storage.ErrStorage, err)
	}
	pt := Partition{PartitionState: st, Key: Key{t.ID, partition}, Topic: t.Name, log: l, delayed: p.delayed, throttle: p.throttle.leader}
	if len(st.Replicas) > 1 {
		pt.leader = p.lead(pt.Key, t.Name, st, l)
	} else if l.Replicated() {
		p.leadAlone(pt.Key, l)
	}
	return pt, nil
}

// HighWatermark is the offset below which records are committed (held by
// every in-sync replica), the end of what consumers may read. With one
// replica it is the log end.
func (pt *Partition) HighWatermark() int64 { return pt.log.HighWatermark() }

// LastStableOffset is the end of what read_committed consumers may read:
// the first offset of the earliest transaction still open, else the high
// watermark.
func (pt *Partition) LastStableOffset() int64 { return pt.log.LastStableOffset() }

// LogStartOffset is the first offset still in the log.
func (pt *Partition) LogStartOffset() int64 { return pt.log.LogStartOffset() }

// Fetched is what a consumer's read returned, with the partition's offsets
// as of that read.
type Fetched struct {
	Records                                         []byte
	HighWatermark, LastStableOffset, LogStartOffset int64
	// AbortedTxns (read_committed only) are the aborted transactions that
	// overlap Records: the consumer drops their batches.
	AbortedTxns []storage.AbortedTxn
	// File (ReadFile only) is where the batches are when they were left in
	// their segment file for a zero-copy send; Records is then nil.
	File storage.FileRange
}

// Len is the number of record bytes read, in Records or File.
func (f *Fetched) Len() int { return len(f.Records) + f.File.Len() }

// Read returns whole record batches from offset for a consumer, at most
// maxBytes unless the first is larger and minOneBatch (KIP-74). A consumer
// reads up to the high watermark, which with one replica is the log end,
// where the log's read stops; a read_committed one (readCommitted) up to
// the last stable offset, and learns the aborted transactions among what it
// read. On error the offsets are the current ones.
func (pt *Partition) Read(offset int64, maxBytes int32, minOneBatch, readCommitted bool) (Fetched, error) {
	return pt.read(offset, maxBytes, minOneBatch, readCommitted, false)
}

// ReadFile is Read for a sender that can send from files (sendfile): a
// read of at least storage.FileRangeMin bytes is left in its segment file
// (Fetched.File) instead of being read.
func (pt *Partition) ReadFile(offset int64, maxBytes int32, minOneBatch, readCommitted bool) (Fetched, error) {
	return pt.read(offset, maxBytes, minOneBatch, readCommitted, true)
}

func (pt *Partition) read(offset int64, maxBytes int32, minOneBatch, readCommitted, asFile bool) (Fetched, error) {
	var res storage.ReadResult
	var err error
	if asFile {
		res, err = pt.log.ReadRange(offset, maxBytes, minOneBatch, readCommitted)
	} else if readCommitted {
		res, err = pt.log.ReadCommitted(offset, maxBytes, minOneBatch)
	} else {
		res, err = pt.log.Read(offset, maxBytes, minOneBatch)
	}
	if err != nil {
		return Fetched{HighWatermark: pt.HighWatermark(), LastStableOffset: pt.LastStableOffset(), LogStartOffset: pt.LogStartOffset()}, err
	}
	return Fetched{Records: res.Records, HighWatermark: res.HighWatermark, LastStableOffset: res.LastStableOffset,
		LogStartOffset: res.LogStartOffset, AbortedTxns: res.AbortedTxns, File: res.File}, nil
}

// Producers are the producers with state in the partition (DescribeProducers).
func (pt *Partition) Producers() ([]storage.ProducerInfo, error) { return pt.log.Producers() }

// AppendAsLeader validates and appends a producer's batch. acks=all (-1)
// needs min.insync.replicas replicas in sync first; with one replica the
// leader's append is then the commit, so nothing waits for followers.
// Operations waiting on the partition are told of the new records.
func (pt *Partition) AppendAsLeader(batch []byte, now time.Time, acks int16, minInsync int) (storage.AppendResult, error) {
	return pt.AppendVerifiedAsLeader(batch, now, acks, minInsync, storage.NoGuard)
}

// StartTxnVerification is the verification guard (KIP-890) a transactional
// batch of producer pid at epoch takes before the coordinator is asked
// about it; storage.NoGuard when the producer's transaction is already
// open here at that epoch and no question is needed.
func (pt *Partition) StartTxnVerification(pid int64, epoch int16) storage.VerificationGuard {
	return pt.log.StartVerification(pid, epoch)
}

// AppendVerifiedAsLeader is AppendAsLeader for a batch verified with
// guard: refused (INVALID_TXN_STATE) if a marker for its producer was
// written since, which would otherwise leave a transaction open here.
func (pt *Partition) AppendVerifiedAsLeader(batch []byte, now time.Time, acks int16, minInsync int, guard storage.VerificationGuard) (storage.AppendResult, error) {
	if acks == -1 {
		if err := pt.CheckInSync(minInsync, pt.Topic, pt.Key.Partition); err != nil {
			return storage.AppendResult{}, err
		}
	}
	res, err := pt.log.AppendVerified(batch, now, guard)
	if err == nil && !res.Duplicate {
		if pt.leader != nil {
			pt.leader.onAppend()
		}
		pt.delayed.Notify(pt.Key)
	}
	return res, err
}

// OffsetForTimestamp is the first record whose timestamp is at least ts
// (ok false when there is none).
func (pt *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	return pt.log.OffsetForTimestamp(ts)
}

// MaxTimestamp is the record with the largest timestamp (KIP-734).
func (pt *Partition) MaxTimestamp() (offset, timestamp int64, err error) {
	return pt.log.MaxTimestamp()
}
