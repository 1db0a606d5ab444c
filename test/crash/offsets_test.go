package crash

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// commitLedger is what committers were told: per group and partition, the
// highest offset acknowledged and the highest offset ever sent.
type commitLedger struct {
	mu    sync.Mutex
	acked map[string]map[int32]int64
	sent  map[string]map[int32]int64
}

func (l *commitLedger) note(m map[string]map[int32]int64, group string, p int32, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m[group] == nil {
		m[group] = map[int32]int64{}
	}
	m[group][p] = max(m[group][p], off)
}

// An OffsetCommit the broker acknowledged survives kill -9 exactly as an
// acknowledged produce does: after each of several kills in the middle of
// a stream of commits from many groups, every group fetches at least the
// offset it was last acknowledged, and never one it did not send.
func TestKill9KeepsAcknowledgedCommits(t *testing.T) {
	const (
		groups     = 8
		partitions = 4
		rounds     = 3
	)
	b := newBroker(t, nil, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := func(addr string) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	if _, err := adm(p.Addr).CreateTopic(ctx, partitions, 1, nil, "offsets"); err != nil {
		t.Fatal(err)
	}
	ledger := &commitLedger{acked: map[string]map[int32]int64{}, sent: map[string]map[int32]int64{}}
	next := int64(0)
	for round := 0; round < rounds; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < groups; g++ {
			group := fmt.Sprintf("crash-group-%d", g)
			client := adm(p.Addr)
			wg.Add(1)
			go func(start int64) {
				defer wg.Done()
				for off := start; ; off++ {
					select {
					case <-stop:
						return
					default:
					}
					var os kadm.Offsets
					for part := int32(0); part < partitions; part++ {
						os.Add(kadm.Offset{Topic: "offsets", Partition: part, At: off, LeaderEpoch: -1})
						ledger.note(ledger.sent, group, part, off)
					}
					cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
					resp, err := client.CommitOffsets(cctx, group, os)
					ccancel()
					if err != nil {
						continue // the broker is down: keep trying until told to stop
					}
					resp.Each(func(r kadm.OffsetResponse) {
						if r.Err == nil {
							ledger.note(ledger.acked, group, r.Partition, r.At)
						}
					})
				}
			}(next)
		}
		// Commits flow for a while, then the broker dies mid-stream.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ledger.mu.Lock()
			n := len(ledger.acked)
			ledger.mu.Unlock()
			if n == groups || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Duration(300+200*round) * time.Millisecond)
		p.Kill9(t)
		close(stop)
		wg.Wait()
		next += 1_000_000 // later rounds commit above everything before

		p = run(t, b)
		checkCommits(t, ctx, adm(p.Addr), ledger, groups, round)
	}
}

func checkCommits(t *testing.T, ctx context.Context, adm *kadm.Client, l *commitLedger, groups, round int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.acked) != groups {
		t.Fatalf("round %d: only %d of %d groups had a commit acknowledged before the kill", round, len(l.acked), groups)
	}
	for group, parts := range l.acked {
		var fetched kadm.OffsetResponses
		var err error
		for attempt := 0; attempt < 50; attempt++ { // the coordinator may still be loading
			if fetched, err = adm.FetchOffsets(ctx, group); err == nil && fetched.Error() == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("round %d: fetch offsets of %s: %v", round, group, err)
		}
		for part, acked := range parts {
			got, ok := fetched.Lookup("offsets", part)
			switch {
			case !ok || got.Err != nil:
				t.Errorf("round %d: %s partition %d: no committed offset after kill -9 (acknowledged %d): %v", round, group, part, acked, got.Err)
			case got.At < acked:
				t.Errorf("round %d: %s partition %d: fetched %d after kill -9, but %d was acknowledged", round, group, part, got.At, acked)
			case got.At > l.sent[group][part]:
				t.Errorf("round %d: %s partition %d: fetched %d, never sent (highest sent %d)", round, group, part, got.At, l.sent[group][part])
			}
		}
	}
}
