package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// member848 is one franz-go consumer of a KIP-848 group (ServerSideBalancer)
// that commits each poll's records synchronously after processing them.
type member848 struct {
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

// ledger is what the members of a group processed and committed.
type ledger struct {
	mu        sync.Mutex
	seen      map[string]int
	committed map[string]bool
	// redone are values delivered again after a commit covered them.
	redone []string
}

func (l *ledger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func start848Member(t *testing.T, addr, topic, group string, l *ledger) *member848 {
	t.Helper()
	return startGroupMember(t, addr, topic, group, l, kgo.ServerSideBalancer())
}

// startGroupMember is a member speaking the group protocol that protocol
// chooses: kgo.ServerSideBalancer() for KIP-848, a classic balancer
// (kgo.Balancers) for JoinGroup/SyncGroup.
func startGroupMember(t *testing.T, addr, topic, group string, l *ledger, protocol kgo.Opt) *member848 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		protocol, kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member848{cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s[%d]: %v", topic, p, err) })
			recs := fs.Records()
			l.mu.Lock()
			for _, r := range recs {
				v := string(r.Value)
				if l.committed[v] {
					l.redone = append(l.redone, v)
				}
				l.seen[v]++
			}
			l.mu.Unlock()
			if len(recs) == 0 {
				continue
			}
			if err := cl.CommitRecords(context.Background(), recs...); err != nil {
				continue // not committed: its records may be seen again, legitimately
			}
			l.mu.Lock()
			for _, r := range recs {
				l.committed[string(r.Value)] = true
			}
			l.mu.Unlock()
		}
	}()
	return m
}

// leave stops polling, then closes the client: a ConsumerGroupHeartbeat
// with epoch -1, after the member's last commit went through.
func (m *member848) leave() {
	m.stop()
	<-m.done
	m.cl.Close()
}

// describe848 returns the state of group and its members' assigned
// partition counts, as ConsumerGroupDescribe reports them ("" while the
// coordinator is not ready).
func describe848(t *testing.T, addr, group string) (state string, counts []int) {
	t.Helper()
	cl := testkit.Client(t, addr)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), cl)
	if err != nil {
		return "", nil // the coordinator is not ready yet: asked again
	}
	g := resp.Groups[0]
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		counts = append(counts, n)
	}
	return g.State, counts
}

// checkCommittedOnce fails t if a record was delivered again after a
// commit covered it, and waits for the group's commits to cover n records.
func (l *ledger) checkCommittedOnce(t *testing.T, adm *kadm.Client, group, topic string, n int64) {
	t.Helper()
	l.mu.Lock()
	if len(l.redone) > 0 {
		t.Errorf("%d committed records delivered again, e.g. %v", len(l.redone), l.redone[:min(5, len(l.redone))])
	}
	l.mu.Unlock()
	waitFor(t, fmt.Sprintf("commits of all %d records", n), 15*time.Second, func() bool {
		return committedTotal(t, adm, group, topic) == n
	})
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Three franz-go KIP-848 consumers share a 6-partition topic, two
// partitions each; one leaves, and the other two take over its partitions
// from its commits: nothing committed is delivered again.
func TestFranzGo848GroupMemberLeaves(t *testing.T) {
	b := brokertest.StartWith(t, testProps(t.TempDir(), groupProps))
	addr := b.Addr()
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "orders", 6, nil)
	l := &ledger{seen: map[string]int{}, committed: map[string]bool{}}

	var members []*member848
	for range 3 {
		members = append(members, start848Member(t, addr, "orders", "g848", l))
	}
	defer func() {
		for _, m := range members {
			m.leave()
		}
	}()
	balanced := func(n, each int) func() bool {
		return func() bool {
			state, counts := describe848(t, addr, "g848")
			if state != "Stable" || len(counts) != n {
				return false
			}
			for _, c := range counts {
				if c != each {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "3 members with 2 partitions each", 30*time.Second, balanced(3, 2))

	produceN(t, addr, "orders", 0, 300)
	waitFor(t, "the first 300 records", 30*time.Second, func() bool { return l.distinct() >= 300 })

	leaving := members[0]
	members = members[1:]
	leaving.leave()
	waitFor(t, "2 members with 3 partitions each", 30*time.Second, balanced(2, 3))

	produceN(t, addr, "orders", 300, 600)
	waitFor(t, "all 600 records", 30*time.Second, func() bool { return l.distinct() >= 600 })

	l.checkCommittedOnce(t, adm, "g848", "orders", 600)
	if got := fmt.Sprint(len(l.seen)); got != "600" {
		t.Fatalf("saw %s distinct values, want 600", got)
	}
}
