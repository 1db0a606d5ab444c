package storage

import (
	"errors"
	"testing"
)

// KIP-890's verification guard: a marker written between a produce's
// verification and its append makes the append fail instead of opening a
// transaction that no marker would end; a guard taken after the marker
// works; once the transaction is open no guard is needed.
func TestVerificationGuardStopsAnAppendOvertakenByAMarker(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	const pid = 9
	mustAppend(t, l, txnBatch(pid, 0, 0, 1, "first"))
	if g := l.StartVerification(pid, 0); g != NoGuard {
		t.Fatalf("a producer with its transaction open here got guard %d", g)
	}
	mustMarker(t, l, pid, 0, true, 1)

	stale := l.StartVerification(pid, 1)
	if stale == NoGuard {
		t.Fatal("no guard for a producer with no transaction open")
	}
	if again := l.StartVerification(pid, 1); again != stale {
		t.Fatalf("concurrent verifications got guards %d and %d", stale, again)
	}
	// The coordinator answers "in the transaction"; meanwhile the
	// transaction ends and its marker is written (a timeout abort, epoch 1).
	mustMarker(t, l, pid, 1, false, 1)
	if _, err := l.AppendVerified(txnBatch(pid, 1, 0, 1, "late"), testNow, stale); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("an append overtaken by a marker: %v, want INVALID_TXN_STATE", err)
	}
	if lso := l.LastStableOffset(); lso != l.LogEndOffset() {
		t.Fatalf("LSO %d, log end %d: a transaction was left open", lso, l.LogEndOffset())
	}

	fresh := l.StartVerification(pid, 1)
	if fresh == NoGuard || fresh == stale {
		t.Fatalf("guard after the marker: %d (stale %d)", fresh, stale)
	}
	if _, err := l.AppendVerified(txnBatch(pid, 1, 0, 1, "verified"), testNow, fresh); err != nil {
		t.Fatalf("a verified append: %v", err)
	}
	if _, err := l.AppendVerified(txnBatch(pid, 1, 1, 1, "next"), testNow, fresh); err != nil {
		t.Fatalf("the next batch of the open transaction: %v", err)
	}
	// Batches without a producer, or not transactional, need no guard.
	if _, err := l.AppendVerified(idem(pid+1, 0, 0, 1), testNow, stale); err != nil {
		t.Fatalf("an idempotent batch: %v", err)
	}
}

// Under TV2 an EndTxn bumps the epoch and the next transaction may begin
// before the bumped marker of the last one reaches a partition: a batch of
// the new epoch is verified even though the producer's transaction of the
// old epoch is still open here, and an append whose guard that marker
// overtook is refused with ErrVerificationOvertaken, so that the marker
// never ends the next transaction's batch with the last one.
func TestVerificationOfANewEpochWhileTheLastTransactionIsOpen(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	const pid = 9
	mustAppend(t, l, txnBatch(pid, 4, 0, 1, "txn4")) // open at epoch 4
	if g := l.StartVerification(pid, 4); g != NoGuard {
		t.Fatalf("the open transaction's own epoch got guard %d", g)
	}
	g := l.StartVerification(pid, 5)
	if g == NoGuard {
		t.Fatal("a batch of the next epoch went unverified while the last transaction is open")
	}
	mustMarker(t, l, pid, 5, true, 0) // the last transaction's marker, at the bumped epoch
	if _, err := l.AppendVerified(txnBatch(pid, 5, 0, 1, "txn5"), testNow, g); !errors.Is(err, ErrVerificationOvertaken) || !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("an append whose verification the marker overtook: %v, want ErrVerificationOvertaken", err)
	}
	fresh := l.StartVerification(pid, 5)
	res, err := l.AppendVerified(txnBatch(pid, 5, 0, 1, "txn5"), testNow, fresh)
	if err != nil {
		t.Fatalf("the append verified again: %v", err)
	}
	if lso := l.LastStableOffset(); lso != res.BaseOffset {
		t.Fatalf("LSO %d, want %d: the new transaction starts after the marker", lso, res.BaseOffset)
	}
}
