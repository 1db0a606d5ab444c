package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFlushMessagesFlushesOnceThatManyWereAppended(t *testing.T) {
	cfg := smallConfig()
	cfg.FlushMessages = 5
	l, _ := openTestLog(t, cfg)
	opened := l.LastFlushTime()
	mustAppend(t, l, testBatch{n: 2}.build(t))
	mustAppend(t, l, testBatch{n: 2}.build(t))
	if n := l.UnflushedMessages(); n != 4 {
		t.Fatalf("%d unflushed messages after 4 appended, want 4", n)
	}
	// The fifth message reaches flush.messages: the log is flushed after the append.
	later := testNow.Add(time.Hour)
	if _, err := l.Append(testBatch{n: 2}.build(t), later); err != nil {
		t.Fatal(err)
	}
	if n := l.UnflushedMessages(); n != 0 {
		t.Fatalf("%d unflushed messages after reaching flush.messages", n)
	}
	if l.LastFlushTime() != later.UnixMilli() || l.LastFlushTime() == opened {
		t.Fatalf("last flush time %d, want the append's %d", l.LastFlushTime(), later.UnixMilli())
	}

	// Follower appends count too.
	f, _ := openTestLog(t, cfg)
	f.SetReplicated(true)
	if _, err := f.AppendAsFollower(builtBatch(t, 0, 6), testNow); err != nil {
		t.Fatal(err)
	}
	if n := f.UnflushedMessages(); n != 0 {
		t.Fatalf("follower: %d unflushed messages after a 6-record batch with flush.messages 5", n)
	}
}

func TestDefaultConfigNeverForcesAFlush(t *testing.T) {
	l, _ := openTestLog(t, smallConfig())
	for range 50 {
		mustAppend(t, l, testBatch{n: 3}.build(t))
	}
	if n := l.UnflushedMessages(); n != 150 {
		t.Fatalf("%d unflushed messages with the default flush.messages, want 150", n)
	}
	// Rolls sync the rolled segment, but the count is of the log, as Kafka's
	// log end minus recovery point: no per-append flush happened.
	if err := l.flushIfDue(testNow.Add(365 * 24 * time.Hour)); err != nil || l.UnflushedMessages() != 150 {
		t.Fatalf("the default flush.ms flushed: %d unflushed, %v", l.UnflushedMessages(), err)
	}
}

func TestFlushMsFlushesOnlyLogsDueAndDirty(t *testing.T) {
	cfg := smallConfig()
	cfg.FlushMs = 60_000
	l, _ := openTestLog(t, cfg)
	last := l.LastFlushTime()
	base := time.UnixMilli(last)
	// Nothing appended: nothing to flush, however old the last flush.
	if err := l.flushIfDue(base.Add(time.Hour)); err != nil || l.LastFlushTime() != last {
		t.Fatalf("a clean log was flushed: %v", err)
	}
	mustAppend(t, l, testBatch{n: 3}.build(t))
	if err := l.flushIfDue(base.Add(59 * time.Second)); err != nil || l.UnflushedMessages() != 3 {
		t.Fatalf("flushed before flush.ms: %d unflushed, %v", l.UnflushedMessages(), err)
	}
	if err := l.flushIfDue(base.Add(60 * time.Second)); err != nil || l.UnflushedMessages() != 0 {
		t.Fatalf("not flushed once flush.ms passed: %d unflushed, %v", l.UnflushedMessages(), err)
	}
	l.Close()
	if err := l.flushIfDue(base.Add(time.Hour)); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush of a closed log: %v", err)
	}
}

func TestManagerFlushCheckRunsWithRetentionWhenTurnedOn(t *testing.T) {
	for _, on := range []bool{true, false} {
		m, err := OpenManager([]string{t.TempDir()}, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		if on {
			m.FlushCheckIntervalMs = 10
		}
		cfg := smallConfig()
		cfg.FlushMs = 0 // every check flushes a dirty log
		l, err := m.Log("t", 0, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch{n: 3}.build(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); m.RunRetention(ctx, time.Hour) }()
		deadline := time.Now().Add(5 * time.Second)
		if !on {
			deadline = time.Now().Add(200 * time.Millisecond)
		}
		for l.UnflushedMessages() != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		<-done
		if flushed := l.UnflushedMessages() == 0; flushed != on {
			t.Fatalf("flush check on=%v: flushed=%v", on, flushed)
		}
		m.Close()
	}
}
