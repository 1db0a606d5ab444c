package storage

import (
	"bytes"
	"errors"
	"testing"

	"kbroker/internal/record"
)

// leaderBytes reads a leader's whole log as its follower would fetch it, up to
// its log end.
func leaderBytes(t *testing.T, l *Log, from int64) []byte {
	t.Helper()
	var out []byte
	for from < l.LogEndOffset() {
		res, err := l.ReadUpTo(from, 1<<20, true, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("leader read at %d returned nothing", from)
		}
		out = append(out, res.Records...)
		recs := decodeBatches(t, res.Records)
		from = recs[len(recs)-1].offset + 1
	}
	return out
}

func TestAppendAsFollowerKeepsWhatTheLeaderAssigned(t *testing.T) {
	cfg := smallConfig()
	cfg.TimestampType = LogAppendTime
	leader, _ := openTestLog(t, cfg)
	leader.SetLeaderEpoch(4)
	for i := range 6 {
		mustAppend(t, leader, testBatch{n: 3, valueSize: 300, pid: 7, epoch: 1, seq: int32(3 * i)}.build(t))
		mustAppend(t, leader, testBatch{n: 2, valueSize: 100}.build(t))
	}
	fetched := leaderBytes(t, leader, 0)

	follower, dir := openTestLog(t, cfg)
	follower.SetReplicated(true)
	follower.SetLeaderEpoch(9) // a follower's own epoch must not be stamped into the leader's batches
	res, err := follower.AppendAsFollower(append([]byte(nil), fetched...), testNow.Add(1e12))
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 29 || follower.LogEndOffset() != 30 {
		t.Fatalf("follower append: %+v, log end %d", res, follower.LogEndOffset())
	}
	if follower.HighWatermark() != 0 {
		t.Fatalf("a replicated follower's high watermark moved by itself to %d", follower.HighWatermark())
	}
	if got := leaderBytes(t, follower, 0); !bytes.Equal(got, fetched) {
		t.Fatal("the follower's log differs from the leader's: offsets, epochs, timestamps or CRCs were rewritten")
	}
	if len(follower.segs) < 2 {
		t.Fatalf("the follower did not roll on segment.bytes: %d segments", len(follower.segs))
	}

	// The follower's producer state came with the batches: promoted to leader,
	// it recognises the producer's retry and expects the next sequence.
	follower.SetReplicated(false)
	dup, err := follower.Append(testBatch{n: 3, valueSize: 300, pid: 7, epoch: 1, seq: 15}.build(t), testNow)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 25 {
		t.Fatalf("retry on the promoted follower: %+v %v", dup, err)
	}
	if _, err := follower.Append(testBatch{n: 1, pid: 7, epoch: 1, seq: 20}.build(t), testNow); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a sequence gap on the promoted follower: %v", err)
	}

	// And the appended batches survive a reopen with recovery.
	follower.Close()
	reopened, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if got := leaderBytes(t, reopened, 0); !bytes.Equal(got, fetched) {
		t.Fatal("the follower's log changed across a reopen")
	}
}

// builtBatch is a stored-format batch at base with n records.
func builtBatch(t *testing.T, base int64, n int) []byte {
	t.Helper()
	b := record.NewBuilder()
	b.BaseOffset, b.LeaderEpoch = base, 1
	for i := range n {
		b.Add(testNow.UnixMilli()+int64(i), []byte("k"), []byte("v"))
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestAppendAsFollowerRefusesBatchesThatDoNotContinueTheLog(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	l.SetReplicated(true)
	if _, err := l.AppendAsFollower(builtBatch(t, 0, 5), testNow); err != nil {
		t.Fatal(err)
	}
	bad := map[string]struct {
		batches []byte
		want    error
	}{
		"overlap with the log":       {builtBatch(t, 3, 4), ErrUnexpectedAppendOffset},
		"a second copy":              {builtBatch(t, 0, 5), ErrUnexpectedAppendOffset},
		"offsets going back":         {append(builtBatch(t, 5, 3), builtBatch(t, 6, 2)...), ErrUnexpectedAppendOffset},
		"a partial batch at the end": {append(builtBatch(t, 5, 3), builtBatch(t, 8, 2)[:20]...), record.ErrCorruptMessage},
		"a bad CRC": {func() []byte {
			b := builtBatch(t, 5, 3)
			b[len(b)-1] ^= 0xff
			return b
		}(), record.ErrCorruptMessage},
	}
	for name, c := range bad {
		if _, err := l.AppendAsFollower(c.batches, testNow); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if l.LogEndOffset() != 5 {
			t.Fatalf("%s: a refused append moved the log end to %d", name, l.LogEndOffset())
		}
	}

	// A gap is the leader's cleaner having removed offsets: accepted, as in
	// Kafka, and a read in the gap finds the next batch.
	if _, err := l.AppendAsFollower(builtBatch(t, 9, 2), testNow); err != nil {
		t.Fatalf("a batch after a compaction gap: %v", err)
	}
	if l.LogEndOffset() != 11 {
		t.Fatalf("log end %d after the gap, want 11", l.LogEndOffset())
	}
	if got := readUpTo(t, l, 6, l.LogEndOffset()); len(got) != 2 || got[0] != 9 {
		t.Fatalf("read in the gap returned offsets %v, want 9 and 10", got)
	}

	cfg := smallConfig()
	cfg.MaxMessageBytes = 100
	l.SetConfig(cfg)
	if _, err := l.AppendAsFollower(builtBatch(t, 11, 10), testNow); !errors.Is(err, record.ErrMessageTooLarge) {
		t.Fatalf("a batch over max.message.bytes: %v", err)
	}
	if res, err := l.AppendAsFollower(nil, testNow); err != nil || res.LastOffset != -1 {
		t.Fatalf("an empty fetch: %+v %v", res, err)
	}
}
