package txn

import (
	"testing"
	"time"
)

// Stats counts ids by state, a transaction's duration from its start to
// Complete*, and the aborts of transactions past their timeout (not the
// ones clients ask for).
func TestStatsCountStatesDurationsAndTimedOutAborts(t *testing.T) {
	h := newHarness(t)
	committed := h.mustInit("committed")
	is(t, "AddPartitions", h.add("committed", committed, t0), nil)
	h.advance(3 * time.Second)
	is(t, "EndTxn", h.end("committed", committed, true), nil)
	h.waitState("committed", CompleteCommit)

	aborted := h.mustInit("aborted")
	is(t, "AddPartitions", h.add("aborted", aborted, t1), nil)
	is(t, "EndTxn", h.end("aborted", aborted, false), nil)
	h.waitState("aborted", CompleteAbort)

	h.mustInit("empty")
	open := h.mustInit("open")
	is(t, "AddPartitions", h.add("open", open, t0), nil)

	st := h.c.Stats(h.ctx())
	if st.IDs[CompleteCommit] != 1 || st.IDs[CompleteAbort] != 1 || st.IDs[Empty] != 1 || st.IDs[Ongoing] != 1 || st.IDs[PrepareCommit] != 0 {
		t.Fatalf("ids by state %v", st.IDs)
	}
	if _, ok := st.IDs[Dead]; ok {
		t.Fatalf("Dead is counted: %v", st.IDs)
	}
	d := st.Durations
	if d.Count != 2 || d.SumSeconds < 3 || d.SumSeconds > 3.5 || st.TimedOutAborts != 0 {
		t.Fatalf("durations %+v, timed-out aborts %d; want 2 transactions summing 3 s, no timed-out abort", d, st.TimedOutAborts)
	}
	// "aborted" took no time on the clock: every bucket has it; the
	// 3-second commit only the buckets from 5 s up.
	for i, le := range DurationBuckets {
		want := uint64(1)
		if le >= 3 {
			want = 2
		}
		if d.Buckets[i] != want {
			t.Errorf("bucket le=%v: %d, want %d", le, d.Buckets[i], want)
		}
	}

	h.advance(70 * time.Second) // past "open"'s 60 s timeout
	h.waitState("open", CompleteAbort)
	if st := h.c.Stats(h.ctx()); st.TimedOutAborts != 1 || st.Durations.Count != 3 || st.IDs[Ongoing] != 0 || st.IDs[CompleteAbort] != 2 {
		t.Fatalf("after the timeout: %+v", st)
	}
}
