package crash

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A KIP-848 member that vanishes without leaving (its leave lost, its
// process gone) is fenced once its session timeout has passed, even when
// the coordinator is killed -9 and restarted more often than that
// timeout: the session counts from when the member was last heard, not
// from each restart. Before, every load re-armed a whole session timeout,
// so under restarts every few seconds the vanished member kept its
// partitions forever and the live member never got them (franz-go's
// TestGroupETL hung that way under test/kgo/run --restart 5 --signal KILL).
func TestKill9RestartsDoNotKeepAVanishedConsumerMember(t *testing.T) {
	const (
		topic      = "sessions"
		group      = "vanishing"
		partitions = 4
		session    = 6 * time.Second
		restartGap = 2 * time.Second // well under the session timeout
	)
	b := newBroker(t, map[string]string{
		"group.consumer.session.timeout.ms":        "6000",
		"group.consumer.min.session.timeout.ms":    "1000",
		"group.consumer.heartbeat.interval.ms":     "1000",
		"group.consumer.min.heartbeat.interval.ms": "500",
	}, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var addr atomic.Value
	addr.Store(p.Addr)
	if _, err := newAdmin(t, p.Addr).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// The vanishing member joins, takes every partition, and is never
	// heard from again.
	vanished := newMemberID()
	join := consumerJoin(group, vanished, topic)
	cl := newClient(t, p.Addr)
	for attempt := 0; ; attempt++ {
		// The first join creates __consumer_offsets: until its
		// partition loads, COORDINATOR_NOT_AVAILABLE.
		resp, err := join.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if attempt == 50 {
			t.Fatalf("vanishing member's join: %v %+v", err, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The live member heartbeats every 300 ms to whichever broker runs,
	// reporting what it owns, and rejoins if it is ever fenced.
	live := &liveMember{id: newMemberID(), group: group, topic: topic}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		live.run(ctx, t, &addr, stop)
	}()
	defer func() { close(stop); wg.Wait() }()

	joined := time.Now()
	for round := 0; ; round++ {
		time.Sleep(restartGap)
		if time.Since(joined) > session+restartGap {
			if members, owned, ok := describeMembers(ctx, t, p.Addr, group); ok && members == 1 && owned == partitions {
				if live.owned() != partitions {
					continue // the live member has yet to hear it
				}
				return // fenced across the restarts; the live member has it all
			}
		}
		if time.Since(joined) > 5*session {
			members, owned, _ := describeMembers(ctx, t, p.Addr, group)
			t.Fatalf("after %d kill -9 restarts over %v: the group still has %d members (the vanished one was never fenced); the live member owns %d of %d partitions (describe: %d)",
				round, time.Since(joined).Round(time.Second), members, live.owned(), partitions, owned)
		}
		p.Kill9(t)
		p = run(t, b)
		addr.Store(p.Addr)
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client { return kadm.NewClient(newClient(t, addr)) }

func newClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newMemberID is a client-made member id, as ConsumerGroupHeartbeat v1
// wants (KIP-1082).
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func consumerJoin(group, member, topic string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = []string{topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// describeMembers is the group's member count and how many partitions
// its members are assigned in all; ok is false if the broker did not
// answer (it may still be loading).
func describeMembers(ctx context.Context, t *testing.T, addr, group string) (members, owned int, ok bool) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, newClient(t, addr))
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return 0, 0, false
	}
	for _, m := range resp.Groups[0].Members {
		for _, tp := range m.Assignment.TopicPartitions {
			owned += len(tp.Partitions)
		}
	}
	return len(resp.Groups[0].Members), owned, true
}

// liveMember is a KIP-848 member driven by hand: one request at a time,
// its owned partitions always what it was last assigned.
type liveMember struct {
	id, group, topic string
	mu               sync.Mutex
	epoch            int32
	assigned         []kmsg.ConsumerGroupHeartbeatRequestTopic
}

func (m *liveMember) owned() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, tp := range m.assigned {
		n += len(tp.Partitions)
	}
	return n
}

func (m *liveMember) run(ctx context.Context, t *testing.T, addr *atomic.Value, stop chan struct{}) {
	var cl *kgo.Client
	var clAddr string
	for {
		select {
		case <-stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
		if a := addr.Load().(string); a != clAddr {
			if cl != nil {
				cl.Close()
			}
			var err error
			if cl, err = kgo.NewClient(kgo.SeedBrokers(a), kgo.RetryTimeout(time.Second)); err != nil {
				t.Error(err)
				return
			}
			clAddr = a
		}
		m.mu.Lock()
		req := consumerJoin(m.group, m.id, m.topic)
		if m.epoch > 0 {
			req.MemberEpoch, req.Topics = m.epoch, m.assigned
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = -1, nil
		}
		m.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := req.RequestWith(cctx, cl)
		cancel()
		if err != nil {
			continue // the broker is down or loading: try again
		}
		m.mu.Lock()
		switch resp.ErrorCode {
		case 0:
			m.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				m.assigned = nil
				for _, tp := range resp.Assignment.Topics {
					rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
					rt.TopicID, rt.Partitions = tp.TopicID, tp.Partitions
					m.assigned = append(m.assigned, rt)
				}
			}
		case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code: // rejoin owning nothing
			m.epoch, m.assigned = 0, nil
		}
		m.mu.Unlock()
	}
}
