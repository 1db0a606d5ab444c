package replica

import (
	"testing"
	"time"

	"kbroker/internal/record"
	"kbroker/internal/storage"
	"kbroker/internal/testkit"
)

// epochLog is a log whose batches carry the given leader epochs, one
// record per batch, in order.
func epochLog(t *testing.T, logs *storage.Manager, name string, epochs ...int32) *storage.Log {
	t.Helper()
	l, err := logs.Log(name, 0, [16]byte{byte(len(name))}, storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range epochs {
		if err := l.StartLeaderEpoch(e); err != nil {
			t.Fatal(err)
		}
		b := record.NewBuilder()
		b.Add(1000, nil, []byte{byte(i)})
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(batch, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// A follower that led in epochs the leader never saw, over two leader
// changes, is cut back over three OffsetForLeaderEpoch rounds to where the
// two logs really agree (offset 2, the end of epoch 0 on both); one round,
// as before, kept its records 2 and 3 of epoch 2, which the leader holds
// as other records of epoch 1.
func TestFollowerTruncatesOverSeveralEpochRounds(t *testing.T) {
	logs := testkit.NewBrokerBase(t).Logs
	leader := epochLog(t, logs, "leader", 0, 0, 1, 1, 1, 3, 3, 5, 5)
	follower := epochLog(t, logs, "follower", 0, 0, 2, 2, 4, 4)

	ask := follower.LatestEpoch()
	rounds := 0
	for {
		rounds++
		if rounds > 10 {
			t.Fatal("truncation did not finish in 10 rounds")
		}
		le, lend := leader.EndOffsetForEpoch(ask) // the leader's OffsetForLeaderEpoch answer
		end, done, next := truncationRound(follower, le, lend)
		if rounds == 1 && (end != 4 || done) {
			t.Fatalf("first round: cut to %d, done %v; want 4 and another round (the follower never had epoch %d)", end, done, le)
		}
		if err := follower.TruncateTo(end); err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		ask = next
	}
	if end := follower.LogEndOffset(); end != 2 || rounds != 3 {
		t.Fatalf("after %d rounds the follower ends at %d, want 2 after 3", rounds, end)
	}
	if e := follower.LatestEpoch(); e != 0 {
		t.Errorf("follower's latest epoch %d, want 0", e)
	}

	// A follower that has the leader's epoch is done in one round, at the
	// smaller of the two ends of that epoch.
	same := epochLog(t, logs, "same", 0, 0, 1, 1, 1, 1)
	le, lend := leader.EndOffsetForEpoch(same.LatestEpoch())
	if end, done, _ := truncationRound(same, le, lend); end != 5 || !done {
		t.Errorf("follower with epoch 1 to offset 6: cut to %d, done %v; want 5 (the leader's end of epoch 1), done", end, done)
	}
}
