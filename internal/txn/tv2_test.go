package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/coordinator"
)

// Transactions V2 (KIP-890 part 2): the state machine as EndTxn v5,
// Produce v12+ and TxnOffsetCommit v5+ drive it.

// produce2 is a TV2 produce's coordinator step: the partition is added.
func (h *harness) produce2(id string, pid int64, epoch int16, tp TopicPartition) error {
	return h.c.VerifyPartition(h.ctx(), id, pid, epoch, tp.Topic, tp.Partition, true)
}

func (h *harness) end2(id string, pid int64, epoch int16, commit bool) EndResult {
	return h.c.EndTxn(h.ctx(), id, pid, epoch, commit, TV2)
}

// writeMeta writes m as the id's record and reloads the coordinator from
// the log, to start from a state the test could not reach quickly (an
// epoch near its end).
func (h *harness) writeMeta(m txnMeta) {
	h.t.Helper()
	done := make(chan error, 1)
	if err := h.c.rt.Shard(0).Do(func() { done <- h.c.rt.Shard(0).Write([]coordinator.Record{txnRecord(&m)}) }); err != nil {
		h.t.Fatal(err)
	}
	if err := <-done; err != nil {
		h.t.Fatal(err)
	}
	h.restart()
}

// Every EndTxn bumps the epoch, commit and abort alike; the markers carry
// the bumped epoch and the answer names it; a produce of the old epoch is
// refused afterwards.
func TestTV2EndTxnBumpsTheEpochAtEveryEnd(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	pid, e := r.ProducerID, r.Epoch
	if err := h.produce2("a", pid, e, t0); err != nil {
		t.Fatalf("implicit add: %v", err)
	}
	got := h.end2("a", pid, e, true)
	if got.Err != nil || got.ProducerID != pid || got.Epoch != e+1 {
		t.Fatalf("EndTxn commit: %+v, want epoch %d", got, e+1)
	}
	h.waitState("a", CompleteCommit)
	if err := h.produce2("a", pid, e, t0); err != kerr.InvalidProducerEpoch {
		t.Fatalf("a produce at the old epoch: %v", err)
	}
	if err := h.produce2("a", pid, e+1, t1); err != nil {
		t.Fatalf("implicit add in the next transaction: %v", err)
	}
	got = h.end2("a", pid, e+1, false)
	if got.Err != nil || got.Epoch != e+2 {
		t.Fatalf("EndTxn abort: %+v, want epoch %d", got, e+2)
	}
	h.waitState("a", CompleteAbort)
	if m := h.markers(t0); len(m) != 1 || !m[0].commit || m[0].epoch != e+1 || m[0].pid != pid {
		t.Fatalf("markers of %v: %+v", t0, m)
	}
	if m := h.markers(t1); len(m) != 1 || m[0].commit || m[0].epoch != e+2 {
		t.Fatalf("markers of %v: %+v", t1, m)
	}
	if d := h.describe("a"); d.ProducerEpoch != e+2 {
		t.Fatalf("described %+v", d)
	}
}

// A retried EndTxn is one epoch behind: it gets the first answer (the
// current producer id and epoch) again, also after a restart, since the
// transaction's version is in its record; the other outcome is
// INVALID_TXN_STATE, and two epochs behind is fenced.
func TestTV2RetriedEndTxnAfterRestart(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	pid, e := r.ProducerID, r.Epoch
	if err := h.produce2("a", pid, e, t0); err != nil {
		t.Fatal(err)
	}
	release := h.holdMarkers()
	if got := h.end2("a", pid, e, true); got.Err != nil || got.Epoch != e+1 {
		t.Fatalf("EndTxn: %+v", got)
	}
	if got := h.end2("a", pid, e, true); got.Err != kerr.ConcurrentTransactions {
		t.Fatalf("a retry while the markers are held: %+v", got)
	}
	if got := h.end2("a", pid, e, false); got.Err != kerr.InvalidTxnState {
		t.Fatalf("the other outcome while the markers are held: %+v", got)
	}
	// The next transaction's end (franz-go aborts when its TxnOffsetCommit
	// was told CONCURRENT_TRANSACTIONS) waits for the markers too.
	if got := h.end2("a", pid, e+1, false); got.Err != kerr.ConcurrentTransactions {
		t.Fatalf("an abort at the bumped epoch while the markers are held: %+v", got)
	}
	release()
	h.waitState("a", CompleteCommit)
	h.restart()
	if got := h.end2("a", pid, e, true); got.Err != nil || got.ProducerID != pid || got.Epoch != e+1 {
		t.Fatalf("a retry after the restart: %+v", got)
	}
	if got := h.end2("a", pid, e, false); got.Err != kerr.InvalidTxnState {
		t.Fatalf("the other outcome retried: %+v", got)
	}
	if got := h.end2("a", pid, e-1, true); got.Err != kerr.ProducerFenced {
		t.Fatalf("two epochs behind: %+v", got)
	}
	if got := h.end2("a", pid, e+1, true); got.Err != kerr.InvalidTxnState {
		t.Fatalf("a commit with nothing open: %+v", got)
	}
}

// A Prepare* left by a coordinator that stopped is completed at load with
// the bumped epoch it recorded.
func TestTV2PreparedTransactionCompletesAfterRestart(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	if err := h.produce2("a", r.ProducerID, r.Epoch, t0); err != nil {
		t.Fatal(err)
	}
	release := h.holdMarkers()
	if got := h.end2("a", r.ProducerID, r.Epoch, false); got.Err != nil {
		t.Fatal(got.Err)
	}
	h.close()
	release()
	h.open()
	h.waitState("a", CompleteAbort)
	if m := h.markers(t0); len(m) == 0 || m[len(m)-1].epoch != r.Epoch+1 || m[len(m)-1].commit {
		t.Fatalf("markers: %+v", m)
	}
}

// Under TV1 a produce may not add its partition; under TV2 it does, which
// opens the transaction.
func TestTV2ProduceAddsThePartition(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	if err := h.c.VerifyPartition(h.ctx(), "a", r.ProducerID, r.Epoch, "t", 0, false); err != kerr.InvalidTxnState {
		t.Fatalf("TV1 verification of a partition not added: %v", err)
	}
	if err := h.produce2("a", r.ProducerID, r.Epoch, t0); err != nil {
		t.Fatal(err)
	}
	if err := h.produce2("a", r.ProducerID, r.Epoch, t0); err != nil {
		t.Fatalf("the partition again: %v", err)
	}
	d := h.describe("a")
	if d.State != Ongoing || len(d.Partitions) != 1 || d.Partitions[0] != t0 {
		t.Fatalf("described %+v", d)
	}
	if err := h.produce2("a", r.ProducerID+1, r.Epoch, t0); err != kerr.InvalidTxnState {
		t.Fatalf("another producer id: %v", err)
	}
}

// Aborting with no transaction open is allowed under TV2 and bumps the
// epoch; a commit is not.
func TestTV2EmptyAbort(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	if got := h.end2("a", r.ProducerID, r.Epoch, true); got.Err != kerr.InvalidTxnState {
		t.Fatalf("empty commit: %+v", got)
	}
	got := h.end2("a", r.ProducerID, r.Epoch, false)
	if got.Err != nil || got.Epoch != r.Epoch+1 {
		t.Fatalf("empty abort: %+v", got)
	}
	h.waitState("a", CompleteAbort)
	if got := h.end2("a", r.ProducerID, r.Epoch+1, false); got.Err != nil || got.Epoch != r.Epoch+2 {
		t.Fatalf("a second empty abort: %+v", got)
	}
	h.waitState("a", CompleteAbort)
	// A TV1 EndTxn at the current epoch is no retry of a TV2 end.
	if got := h.c.EndTxn(h.ctx(), "a", r.ProducerID, r.Epoch+2, false, TV1); got.Err != kerr.InvalidTxnState {
		t.Fatalf("TV1 abort after a TV2 one: %+v", got)
	}
}

// When the epoch would reach Short.MAX_VALUE - 1's successor, EndTxn's
// answer is a new producer id at epoch 0: the markers carry the old id at
// the last epoch, and a retry naming the old id is recognised.
func TestTV2EpochOverflowGivesANewProducerID(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	last := int16(1<<15 - 2)
	h.writeMeta(txnMeta{id: "a", producerID: r.ProducerID, prevProducerID: -1, nextProducerID: -1, epoch: last,
		timeout: time.Minute, state: Ongoing, partitions: map[TopicPartition]struct{}{t0: {}},
		start: h.clock.Now(), lastUpdate: h.clock.Now(), clientTV: TV2})
	got := h.end2("a", r.ProducerID, last, true)
	if got.Err != nil || got.ProducerID == r.ProducerID || got.ProducerID < 0 || got.Epoch != 0 {
		t.Fatalf("EndTxn at the last epoch: %+v", got)
	}
	h.waitState("a", CompleteCommit)
	if m := h.markers(t0); len(m) != 1 || m[0].pid != r.ProducerID || m[0].epoch != last+1 {
		t.Fatalf("markers: %+v", m)
	}
	if d := h.describe("a"); d.ProducerID != got.ProducerID || d.ProducerEpoch != 0 {
		t.Fatalf("described %+v", d)
	}
	h.restart()
	if retry := h.end2("a", r.ProducerID, last, true); retry.Err != nil || retry.ProducerID != got.ProducerID || retry.Epoch != 0 {
		t.Fatalf("a retry naming the old producer id: %+v, want %+v", retry, got)
	}
	if err := h.produce2("a", got.ProducerID, 0, t1); err != nil {
		t.Fatalf("the new producer id's transaction: %v", err)
	}
}

// A timed-out TV2 transaction is aborted two epochs up (the fence, then
// the abort's own bump), so its producer's EndTxn is fenced rather than
// taken for a retry of the abort.
func TestTV2TimedOutTransactionFencesItsProducer(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	if err := h.produce2("a", r.ProducerID, r.Epoch, t0); err != nil {
		t.Fatal(err)
	}
	h.advance(2 * time.Minute)
	h.waitState("a", CompleteAbort)
	if m := h.markers(t0); len(m) != 1 || m[0].commit || m[0].epoch != r.Epoch+2 {
		t.Fatalf("markers: %+v", m)
	}
	for _, commit := range []bool{true, false} {
		if got := h.end2("a", r.ProducerID, r.Epoch, commit); got.Err != kerr.ProducerFenced {
			t.Fatalf("EndTxn(commit=%v) of the fenced producer: %+v", commit, got)
		}
	}
}

// A TV2 producer whose EndTxn was answered by a coordinator killed before
// the answer reached it recovers with InitProducerId at the epoch it had
// (KIP-360, as franz-go does after an unconfirmed EndTxn): the restarted
// coordinator knows that epoch as the one before the EndTxn's bump, and
// answers the bumped epoch instead of PRODUCER_FENCED. An epoch older
// than that is still fenced, and so is a retry once the id started over.
func TestTV2InitProducerIDAfterAnUnansweredEndTxnSurvivesARestart(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	pid := r.ProducerID
	// One transaction first, so that the epoch before the last bump is
	// one a producer had (not the -1 of no epoch).
	if err := h.produce2("a", pid, r.Epoch, t0); err != nil {
		t.Fatalf("implicit add: %v", err)
	}
	first := h.end2("a", pid, r.Epoch, true)
	if first.Err != nil {
		t.Fatalf("EndTxn commit: %+v", first)
	}
	h.waitState("a", CompleteCommit)
	e := first.Epoch
	if err := h.produce2("a", pid, e, t0); err != nil {
		t.Fatalf("implicit add: %v", err)
	}
	if got := h.end2("a", pid, e, false); got.Err != nil || got.Epoch != e+1 {
		t.Fatalf("EndTxn abort: %+v", got)
	}
	h.waitState("a", CompleteAbort)
	h.restart()
	if got := h.init("a", pid, e-1); got.Err != kerr.ProducerFenced {
		t.Fatalf("InitProducerId at an epoch older than the EndTxn's: %+v, want PRODUCER_FENCED", got)
	}
	got := h.init("a", pid, e)
	if got.Err != nil || got.ProducerID != pid || got.Epoch != e+1 {
		t.Fatalf("InitProducerId at the epoch of the unanswered EndTxn after a restart: %+v, want producer %d epoch %d", got, pid, e+1)
	}
	// The id is Empty now, as an InitProducerId leaves it: a second
	// restart knows no earlier epoch, so the old one is fenced again.
	h.restart()
	if again := h.init("a", pid, e); again.Err != kerr.ProducerFenced {
		t.Fatalf("InitProducerId at the old epoch after it was answered and the coordinator restarted: %+v, want PRODUCER_FENCED", again)
	}
}
