package interop

import (
	"context"
	"errors"
	"fmt"
	"kbroker/internal/testkit"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// saramaHandler marks every message it is given, and signals once want
// distinct values have been seen across the group.
type saramaHandler struct {
	mu   *sync.Mutex
	seen map[string]int
	// members are the member ids that were handed messages.
	members map[string]bool
	want    int
	done    chan struct{}
	once    *sync.Once
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.mu.Lock()
		h.seen[string(msg.Value)]++
		h.members[sess.MemberID()] = true
		if len(h.seen) >= h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
		sess.MarkMessage(msg, "")
	}
	return nil
}

// saramaGroupConsume runs members sarama ConsumerGroups with the given
// strategy until they have seen want distinct values, then closes them
// (committing what was marked).
func saramaGroupConsume(t *testing.T, addr, topic, group string, members, want int, strategy sarama.BalanceStrategy) (seen map[string]int, consumers int) {
	t.Helper()
	h := saramaHandler{mu: &sync.Mutex{}, seen: map[string]int{}, members: map[string]bool{}, want: want, done: make(chan struct{}), once: &sync.Once{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var groups []sarama.ConsumerGroup
	for i := 0; i < members; i++ {
		cfg := sarama.NewConfig()
		cfg.ClientID = fmt.Sprintf("sarama-member-%d", i)
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
		cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
		cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		groups = append(groups, cg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					t.Errorf("Consume: %v", err)
					return
				}
			}
		}()
	}
	select {
	case <-h.done:
	case <-time.After(60 * time.Second):
		h.mu.Lock()
		t.Errorf("sarama group %s saw %d of %d values", group, len(h.seen), want)
		h.mu.Unlock()
	}
	// Every member leaves at once, as processes shutting down do; one still
	// joining would otherwise wait for the others' sessions to expire.
	cancel()
	for _, cg := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cg.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}()
	}
	wg.Wait()
	return h.seen, len(h.members)
}

// sarama's ConsumerGroup (default version 2.8: JoinGroup v7, SyncGroup v5,
// OffsetCommit v8, OffsetFetch v7) with each of its balance strategies:
// three members share the partitions, commits land, and a group started
// again later reads only what was produced since.
func TestSaramaConsumerGroup(t *testing.T) {
	for _, strategy := range []sarama.BalanceStrategy{
		sarama.NewBalanceStrategyRange(), sarama.NewBalanceStrategyRoundRobin(), sarama.NewBalanceStrategySticky(),
	} {
		t.Run(strategy.Name(), func(t *testing.T) {
			// Kafka's default initial delay (3 s, re-armed while members
			// arrive) lets the three members start in one generation, so
			// the strategy really splits the partitions; one second was
			// seen too short for the third member on a loaded machine.
			addr := brokertest.Start(t, config.Properties{"group.initial.rebalance.delay.ms": "3000"}).Addr()
			adm := newAdmin(t, addr)
			testkit.CreateTopic(t, adm, "events", 4, nil)
			produceN(t, addr, "events", 0, 200)
			seen, consumers := saramaGroupConsume(t, addr, "events", "sg", 3, 200, strategy)
			if len(seen) != 200 || consumers != 3 {
				t.Fatalf("saw %d values through %d members, want 200 through 3", len(seen), consumers)
			}
			if got := committedTotal(t, adm, "sg", "events"); got != 200 {
				t.Fatalf("committed offsets sum to %d, want 200", got)
			}
			produceN(t, addr, "events", 200, 240)
			seen, _ = saramaGroupConsume(t, addr, "events", "sg", 2, 40, strategy)
			for v := range seen {
				var n int
				fmt.Sscan(v, &n)
				if n < 200 {
					t.Errorf("value %s consumed again after its commit", v)
				}
			}
		})
	}
}
