package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/coordinator"
)

var (
	t0 = TopicPartition{"t", 0}
	t1 = TopicPartition{"t", 1}
)

// Every pair of states against Kafka's TransactionState.validPreviousStates.
func TestStateTransitionsAreKafkas(t *testing.T) {
	allowed := map[[2]State]bool{}
	for _, p := range [][2]State{
		{Empty, Empty}, {CompleteCommit, Empty}, {CompleteAbort, Empty},
		{Empty, Ongoing}, {Ongoing, Ongoing}, {CompleteCommit, Ongoing}, {CompleteAbort, Ongoing},
		{Ongoing, PrepareCommit},
		{Ongoing, PrepareAbort}, {PrepareEpochFence, PrepareAbort},
		// Kafka 4.0 (TV2): an abort with no transaction open.
		{Empty, PrepareAbort}, {CompleteCommit, PrepareAbort}, {CompleteAbort, PrepareAbort},
		{PrepareCommit, CompleteCommit},
		{PrepareAbort, CompleteAbort},
		{Empty, Dead}, {CompleteCommit, Dead}, {CompleteAbort, Dead},
		{Ongoing, PrepareEpochFence},
	} {
		allowed[p] = true
	}
	for from := Empty; from <= PrepareEpochFence; from++ {
		for to := Empty; to <= PrepareEpochFence; to++ {
			if got := CanTransition(from, to); got != allowed[[2]State{from, to}] {
				t.Errorf("%v → %v allowed: %v", from, to, got)
			}
		}
	}
	for s := Empty; s <= PrepareEpochFence; s++ {
		if got, ok := StateNamed(s.String()); !ok || got != s {
			t.Errorf("state %d named %q reads back as %v", s, s.String(), got)
		}
	}
	if _, ok := StateNamed("Stable"); ok {
		t.Error("a group state is a transaction state")
	}
}

func TestInitProducerIDBumpsTheEpochAndFencesTheOldProducer(t *testing.T) {
	h := newHarness(t)
	first := h.mustInit("a")
	if first.Epoch != 0 {
		t.Fatalf("a new id starts at epoch %d", first.Epoch)
	}
	second := h.mustInit("a")
	if second.ProducerID != first.ProducerID || second.Epoch != 1 {
		t.Fatalf("second InitProducerId: %+v after %+v", second, first)
	}
	is(t, "AddPartitions at the old epoch", h.add("a", first, t0), kerr.ProducerFenced)
	is(t, "EndTxn at the old epoch", h.end("a", first, true), kerr.ProducerFenced)
	is(t, "AddPartitions of another producer id", h.add("a", InitResult{ProducerID: first.ProducerID + 1, Epoch: 1}, t0), kerr.InvalidProducerIDMapping)
	is(t, "AddPartitions of an unknown id", h.add("b", second, t0), kerr.InvalidProducerIDMapping)
	other := h.mustInit("b")
	if other.ProducerID == first.ProducerID {
		t.Fatal("two ids share a producer id")
	}
}

func TestInitProducerIDRefusesTimeoutsAboveTheMaximum(t *testing.T) {
	h := newHarness(t)
	for _, ms := range []int32{0, -1, int32(h.cfg.MaxTimeout.Milliseconds()) + 1} {
		if r := h.c.InitProducerID(h.ctx(), "a", ms, -1, -1); r.Err != kerr.InvalidTransactionTimeout {
			t.Errorf("timeout %d ms: %v", ms, r.Err)
		}
	}
	if r := h.c.InitProducerID(h.ctx(), "a", int32(h.cfg.MaxTimeout.Milliseconds()), -1, -1); r.Err != nil {
		t.Errorf("timeout at the maximum: %v", r.Err)
	}
	if r := h.c.InitProducerID(h.ctx(), "", 1000, -1, -1); r.Err != kerr.InvalidRequest {
		t.Errorf("empty transactional id: %v", r.Err)
	}
}

// KIP-360: a producer naming its current producer id and epoch gets a
// bump; a retry of that call (naming the epoch it had) the same answer; a
// producer naming an epoch that was neither is fenced.
func TestInitProducerIDRecoversTheNamedProducer(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	bumped := h.init("a", r.ProducerID, r.Epoch)
	if bumped.Err != nil || bumped.Epoch != r.Epoch+1 || bumped.ProducerID != r.ProducerID {
		t.Fatalf("recovery: %+v", bumped)
	}
	retry := h.init("a", r.ProducerID, r.Epoch)
	if retry.Err != nil || retry.Epoch != bumped.Epoch {
		t.Fatalf("retry of the recovery: %+v, want epoch %d", retry, bumped.Epoch)
	}
	if stale := h.init("a", r.ProducerID, r.Epoch+5); stale.Err != kerr.ProducerFenced {
		t.Fatalf("an epoch never handed out: %+v", stale)
	}
	if other := h.init("a", r.ProducerID+100, 0); other.Err != kerr.ProducerFenced {
		t.Fatalf("another producer id: %+v", other)
	}
}

func TestCommitWritesEveryMarkerThenCompleteCommit(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	is(t, "EndTxn with no transaction", h.end("a", r, true), kerr.InvalidTxnState)
	is(t, "AddPartitions", h.add("a", r, t0, t1), nil)
	is(t, "AddPartitions again", h.add("a", r, t0), nil)
	d := h.describe("a")
	if d.State != Ongoing || len(d.Partitions) != 2 || d.StartMillis != h.clock.Now().UnixMilli() {
		t.Fatalf("after AddPartitions: %+v", d)
	}
	is(t, "EndTxn commit", h.end("a", r, true), nil)
	d = h.waitState("a", CompleteCommit)
	if len(d.Partitions) != 0 || d.StartMillis != -1 {
		t.Fatalf("completed: %+v", d)
	}
	for _, tp := range []TopicPartition{t0, t1} {
		ms := h.markers(tp)
		if len(ms) != 1 || !ms[0].commit || ms[0].pid != r.ProducerID || ms[0].epoch != r.Epoch || ms[0].coordEpoch != 3 {
			t.Fatalf("markers of %v: %+v", tp, ms)
		}
	}
	is(t, "a retried EndTxn commit", h.end("a", r, true), nil)
	is(t, "EndTxn abort after a commit", h.end("a", r, false), kerr.InvalidTxnState)
	// The next transaction starts from CompleteCommit at the same epoch.
	is(t, "AddPartitions of the next transaction", h.add("a", r, t1), nil)
	is(t, "EndTxn abort", h.end("a", r, false), nil)
	h.waitState("a", CompleteAbort)
	if ms := h.markers(t1); len(ms) != 2 || ms[1].commit {
		t.Fatalf("markers of t-1 after the abort: %+v", ms)
	}
	if ms := h.markers(t0); len(ms) != 1 {
		t.Fatalf("t-0 was not in the second transaction but got markers: %+v", ms)
	}
	is(t, "a retried EndTxn abort", h.end("a", r, false), nil)
	is(t, "EndTxn commit after an abort", h.end("a", r, true), kerr.InvalidTxnState)
}

// While the markers of an ended transaction are being written every other
// transition of the id waits: CONCURRENT_TRANSACTIONS, retriable.
func TestTransitionsWaitForTheMarkers(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	is(t, "AddPartitions", h.add("a", r, t0), nil)
	release := h.holdMarkers()
	defer release()
	is(t, "EndTxn commit", h.end("a", r, true), nil)
	if d := h.describe("a"); d.State != PrepareCommit || len(d.Partitions) != 1 {
		t.Fatalf("while markers are held: %+v (the partition still waits for its marker)", d)
	}
	// The next transaction's AddPartitions waits for the markers, and is
	// answered CONCURRENT_TRANSACTIONS only if they take longer than
	// settleWait.
	added := make(chan *kerr.Error, 1)
	go func() { added <- h.add("a", r, t1) }()
	select {
	case e := <-added:
		t.Fatalf("AddPartitions answered %v while the markers were held, before settleWait", e)
	case <-time.After(100 * time.Millisecond):
	}
	h.clock.Advance(settleWait)
	select {
	case e := <-added:
		is(t, "AddPartitions after settleWait", e, kerr.ConcurrentTransactions)
	case <-time.After(5 * time.Second):
		t.Fatal("AddPartitions still waiting after settleWait")
	}
	is(t, "EndTxn commit retried", h.end("a", r, true), kerr.ConcurrentTransactions)
	is(t, "EndTxn abort", h.end("a", r, false), kerr.InvalidTxnState)
	if got := h.init("a", -1, -1); got.Err != kerr.ConcurrentTransactions {
		t.Fatalf("InitProducerId: %v", got.Err)
	}
	if err := h.c.VerifyPartition(h.ctx(), "a", r.ProducerID, r.Epoch, "t", 0, false); err != kerr.ConcurrentTransactions {
		t.Fatalf("verification: %v", err)
	}
	release()
	h.waitState("a", CompleteCommit)
	if got := h.init("a", -1, -1); got.Err != nil || got.Epoch != r.Epoch+1 {
		t.Fatalf("InitProducerId after the commit: %+v", got)
	}
}

// A producer that begins its next transaction while the last one's markers
// are being written waits for them instead of being told
// CONCURRENT_TRANSACTIONS: its AddPartitions succeeds once Complete* is in.
func TestAddPartitionsWaitsForThePreviousMarkers(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	is(t, "AddPartitions", h.add("a", r, t0), nil)
	release := h.holdMarkers()
	defer release()
	is(t, "EndTxn commit", h.end("a", r, true), nil)
	added := make(chan *kerr.Error, 1)
	go func() { added <- h.add("a", r, t1) }()
	time.Sleep(50 * time.Millisecond)
	release()
	select {
	case e := <-added:
		is(t, "AddPartitions once the markers are in", e, nil)
	case <-time.After(5 * time.Second):
		t.Fatal("AddPartitions still waiting after the markers were written")
	}
	if d := h.describe("a"); d.State != Ongoing || len(d.Partitions) != 1 {
		t.Fatalf("the next transaction: %+v", d)
	}
}

// A second producer with the same id fences an open transaction: it is
// aborted at a bumped epoch, the new producer is told to retry, and its
// retry gets the epoch after that.
func TestInitProducerIDAbortsTheOpenTransaction(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	is(t, "AddPartitions", h.add("a", r, t0), nil)
	if got := h.init("a", -1, -1); got.Err != kerr.ConcurrentTransactions {
		t.Fatalf("InitProducerId over an open transaction: %v", got.Err)
	}
	d := h.waitState("a", CompleteAbort)
	if d.ProducerEpoch != r.Epoch+1 {
		t.Fatalf("fenced at epoch %d, want %d", d.ProducerEpoch, r.Epoch+1)
	}
	if ms := h.markers(t0); len(ms) != 1 || ms[0].commit || ms[0].epoch != r.Epoch+1 {
		t.Fatalf("markers: %+v", ms)
	}
	is(t, "EndTxn of the fenced producer", h.end("a", r, true), kerr.ProducerFenced)
	if got := h.mustInit("a"); got.Epoch != r.Epoch+2 {
		t.Fatalf("the retry got epoch %d, want %d", got.Epoch, r.Epoch+2)
	}
}

func TestTimedOutTransactionIsAbortedAtABumpedEpoch(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a") // 60 s timeout
	is(t, "AddPartitions", h.add("a", r, t0, t1), nil)
	h.advance(50 * time.Second)
	if d := h.describe("a"); d.State != Ongoing {
		t.Fatalf("aborted before its timeout: %v", d.State)
	}
	h.advance(20 * time.Second)
	d := h.waitState("a", CompleteAbort)
	if d.ProducerEpoch != r.Epoch+1 {
		t.Fatalf("abort at epoch %d, want %d", d.ProducerEpoch, r.Epoch+1)
	}
	for _, tp := range []TopicPartition{t0, t1} {
		if ms := h.markers(tp); len(ms) != 1 || ms[0].commit || ms[0].epoch != r.Epoch+1 {
			t.Fatalf("markers of %v: %+v", tp, ms)
		}
	}
	is(t, "the timed-out producer's EndTxn", h.end("a", r, true), kerr.ProducerFenced)
	is(t, "the timed-out producer's AddPartitions", h.add("a", r, t0), kerr.ProducerFenced)
}

func TestIdleTransactionalIDExpires(t *testing.T) {
	h := newHarness(t)
	h.cfg.IDExpiration, h.cfg.ExpirationCheck = 2*time.Minute, time.Minute
	h.restart()
	r := h.mustInit("idle")
	busy := h.c.InitProducerID(h.ctx(), "busy", int32(h.cfg.MaxTimeout.Milliseconds()), -1, -1)
	is(t, "InitProducerId", busy.Err, nil)
	is(t, "AddPartitions", h.add("busy", busy, t0), nil)
	h.advance(90 * time.Second)
	if d := h.describe("idle"); d.Err != nil {
		t.Fatalf("expired before transactional.id.expiration.ms: %+v", d)
	}
	h.advance(90 * time.Second)
	if d := h.describe("idle"); d.Err != kerr.TransactionalIDNotFound {
		t.Fatalf("idle id after expiry: %+v", d)
	}
	if d := h.describe("busy"); d.Err != nil || d.State != Ongoing {
		t.Fatalf("an id with a transaction open expired: %+v", d)
	}
	h.restart()
	if d := h.describe("idle"); d.Err != kerr.TransactionalIDNotFound {
		t.Fatalf("expired id after a restart: %+v", d)
	}
	if got := h.mustInit("idle"); got.ProducerID == r.ProducerID {
		t.Fatal("an expired id came back with its old producer id")
	}
}

// A restarted coordinator finds an ongoing transaction as it was, and
// completes one that was prepared: markers again, then Complete*.
func TestReplayRestoresOngoingAndCompletesPrepared(t *testing.T) {
	h := newHarness(t)
	ongoing := h.mustInit("ongoing")
	is(t, "AddPartitions", h.add("ongoing", ongoing, t0, t1), nil)
	prepared := h.mustInit("prepared")
	is(t, "AddPartitions", h.add("prepared", prepared, t1), nil)
	release := h.holdMarkers()
	is(t, "EndTxn commit", h.end("prepared", prepared, true), nil)
	h.restart() // the held marker writer gives up with the old shard
	release()
	d := h.describe("ongoing")
	if d.State != Ongoing || len(d.Partitions) != 2 || d.ProducerEpoch != ongoing.Epoch || d.TimeoutMillis != 60_000 {
		t.Fatalf("ongoing after restart: %+v", d)
	}
	h.waitState("prepared", CompleteCommit)
	if ms := h.markers(t1); len(ms) != 1 || !ms[0].commit || ms[0].pid != prepared.ProducerID {
		t.Fatalf("markers after the restart: %+v", ms)
	}
	is(t, "EndTxn of the restored transaction", h.end("ongoing", ongoing, false), nil)
	h.waitState("ongoing", CompleteAbort)
	h.restart()
	if d := h.describe("ongoing"); d.State != CompleteAbort {
		t.Fatalf("after a second restart: %+v", d)
	}
	if got := h.mustInit("prepared"); got.ProducerID != prepared.ProducerID || got.Epoch != prepared.Epoch+1 {
		t.Fatalf("InitProducerId after restarts: %+v", got)
	}
}

func TestMarkersSkipDeletedPartitions(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	is(t, "AddPartitions", h.add("a", r, t0, TopicPartition{"gone", 0}), nil)
	is(t, "EndTxn", h.end("a", r, true), nil)
	h.waitState("a", CompleteCommit)
	if ms := h.markers(t0); len(ms) != 1 {
		t.Fatalf("markers: %+v", ms)
	}
}

func TestVerifyPartition(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	ctx := h.ctx()
	if err := h.c.VerifyPartition(ctx, "a", r.ProducerID, r.Epoch, "t", 0, false); err != kerr.InvalidTxnState {
		t.Fatalf("no transaction: %v", err)
	}
	is(t, "AddPartitions", h.add("a", r, t0), nil)
	if err := h.c.VerifyPartition(ctx, "a", r.ProducerID, r.Epoch, "t", 0, false); err != nil {
		t.Fatalf("added partition: %v", err)
	}
	if err := h.c.VerifyPartition(ctx, "a", r.ProducerID, r.Epoch, "t", 1, false); err != kerr.InvalidTxnState {
		t.Fatalf("partition not added: %v", err)
	}
	if err := h.c.VerifyPartition(ctx, "a", r.ProducerID, r.Epoch-1, "t", 0, false); err != kerr.InvalidProducerEpoch {
		t.Fatalf("old epoch: %v", err)
	}
	if err := h.c.VerifyPartition(ctx, "a", r.ProducerID+1, r.Epoch, "t", 0, false); err != kerr.InvalidTxnState {
		t.Fatalf("another producer: %v", err)
	}
}

func TestListAndDescribeFilters(t *testing.T) {
	h := newHarness(t)
	a := h.mustInit("app-a")
	h.mustInit("app-b")
	h.mustInit("other")
	is(t, "AddPartitions", h.add("app-a", a, t0), nil)
	h.advance(5 * time.Second)
	names := func(f ListFilter) (out []string) {
		for _, l := range h.c.List(h.ctx(), f) {
			out = append(out, l.TransactionalID+"/"+l.State.String())
		}
		return out
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", what, got, want)
			}
		}
	}
	check("all", names(ListFilter{}), "app-a/Ongoing", "app-b/Empty", "other/Empty")
	check("Ongoing", names(ListFilter{States: []State{Ongoing}}), "app-a/Ongoing")
	check("producer id", names(ListFilter{ProducerIDs: []int64{a.ProducerID}}), "app-a/Ongoing")
	check("open 4 s", names(ListFilter{MinDuration: 4 * time.Second}), "app-a/Ongoing")
	check("open 6 s", names(ListFilter{MinDuration: 6 * time.Second}))
	d := h.describe("app-a")
	if d.State != Ongoing || d.ProducerID != a.ProducerID || d.TimeoutMillis != 60_000 || len(d.Partitions) != 1 {
		t.Fatalf("describe: %+v", d)
	}
}

// An id whose epoch ran out gets a new producer id at epoch 0 (Kafka's
// prepareProducerIdRotation); the producer that named the exhausted epoch
// may retry and gets the same answer. The exhausted id is written as a
// record of the log, which the restarted coordinator replays.
func TestExhaustedEpochRotatesTheProducerID(t *testing.T) {
	h := newHarness(t)
	r := h.mustInit("a")
	worn := txnMeta{id: "a", producerID: r.ProducerID, prevProducerID: -1, nextProducerID: -1, epoch: 1<<15 - 2, timeout: time.Minute,
		state: CompleteCommit, partitions: map[TopicPartition]struct{}{}, lastUpdate: h.clock.Now()}
	done := make(chan error, 1)
	if err := h.c.rt.Shard(0).Do(func() { done <- h.c.rt.Shard(0).Write([]coordinator.Record{txnRecord(&worn)}) }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.restart()
	rotated := h.init("a", r.ProducerID, worn.epoch)
	if rotated.Err != nil || rotated.ProducerID == r.ProducerID || rotated.Epoch != 0 {
		t.Fatalf("rotation: %+v", rotated)
	}
	retry := h.init("a", r.ProducerID, worn.epoch)
	if retry.Err != nil || retry.ProducerID != rotated.ProducerID || retry.Epoch != 0 {
		t.Fatalf("a retry of the rotation: %+v, want %+v", retry, rotated)
	}
	if d := h.describe("a"); d.ProducerID != rotated.ProducerID {
		t.Fatalf("described %+v", d)
	}
}
