package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/record"
)

func appendTxn(t *testing.T, pt Partition, pid int64, seq int32, ts int64) {
	t.Helper()
	b := record.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, 0, seq, true
	b.Add(ts, nil, []byte("v"))
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.AppendAsLeader(batch, time.Now(), 1, 1); err != nil {
		t.Fatal(err)
	}
}

// A leader's marker ends the transaction: the LSO, which ListOffsets
// answers read_committed consumers with, follows; a time lookup does not
// name a record read_committed consumers cannot read yet.
func TestWriteTxnMarkerMovesTheLastStableOffset(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1}, []int32{2})
	snap := store.Snapshot()
	pt, err := p.Lead(snap, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendTxn(t, pt, 5, 0, 1000) // offset 0
	if off, _, _ := pt.ListOffset(OffsetLatest, true); off != 0 || pt.HighWatermark() != 1 {
		t.Fatalf("read_committed latest %d, HW %d; want 0 and 1", off, pt.HighWatermark())
	}
	if off, _, _ := pt.ListOffset(500, true); off != -1 {
		t.Fatalf("read_committed time lookup named offset %d of an open transaction", off)
	}
	if off, _, _ := pt.ListOffset(500, false); off != 0 {
		t.Fatalf("read_uncommitted time lookup = %d, want 0", off)
	}
	seen := p.Delayed().Notifications()
	m := TxnMarker{ProducerID: 5, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 1}
	if err := p.WriteTxnMarker(context.Background(), snap, "t", 0, m, time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Delayed().Notifications() == seen {
		t.Fatal("a marker did not wake the fetches waiting on the partition")
	}
	if off, _, _ := pt.ListOffset(OffsetLatest, true); off != 2 || pt.LastStableOffset() != 2 {
		t.Fatalf("read_committed latest %d after the commit, want 2", off)
	}
	if err := p.WriteTxnMarker(context.Background(), snap, "t", 1, m, time.Second); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("marker for a partition broker 2 leads: %v", err)
	}
	if err := p.WriteTxnMarker(context.Background(), snap, "nope", 0, m, time.Second); !errors.Is(err, meta.ErrUnknownTopic) {
		t.Fatalf("marker for a missing topic: %v", err)
	}
}

// A marker on a partition whose followers do not fetch it waits for them
// only as long as it is told (the broker passes its request.timeout.ms),
// then answers REQUEST_TIMED_OUT (ErrReplicationTimeout) for the
// coordinator to write it again.
func TestWriteTxnMarkerWaitsForTheInSyncReplicasAtMostItsTimeout(t *testing.T) {
	p, store := testPartitions(t)
	topic := createTopic(t, store, "t", []int32{1, 2, 3})
	snap := store.Snapshot()
	pt, err := p.Lead(snap, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendTxn(t, pt, 5, 0, 1000)
	m := TxnMarker{ProducerID: 5, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 1}
	const timeout = 300 * time.Millisecond
	start := time.Now()
	err = p.WriteTxnMarker(context.Background(), snap, "t", 0, m, timeout)
	took := time.Since(start)
	if !errors.Is(err, ErrReplicationTimeout) {
		t.Fatalf("marker no follower fetched: %v, want ErrReplicationTimeout", err)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Fatalf("the marker waited %v for the in-sync replicas, want about %v", took, timeout)
	}
}
