package admin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient is a kgo client with the given client-id, which is what the
// client-id quotas below are keyed on.
func newClient(addr, clientID string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID)}, opts...)...)
}

// closeBounded closes a client without letting a wedged broker hang the job.
func closeBounded(cl *kgo.Client) {
	done := make(chan struct{})
	go func() { cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// Quota is one quota value on one entity, e.g. {"client-id", "q1",
// "producer_byte_rate", 1 << 20}.
type Quota struct {
	EntityType, Name, Key string
	Value                 float64
}

// SetQuotas applies quotas with one AlterClientQuotas request and fails on
// any per-entity error.
func SetQuotas(ctx context.Context, addr string, qs ...Quota) error {
	cl, err := newClient(addr, "kbench-admin")
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	return setQuotas(ctx, kadm.NewClient(cl), qs...)
}

func setQuotas(ctx context.Context, adm *kadm.Client, qs ...Quota) error {
	byEntity := map[[2]string]*kadm.AlterClientQuotaEntry{}
	var order [][2]string
	for _, q := range qs {
		k := [2]string{q.EntityType, q.Name}
		e, ok := byEntity[k]
		if !ok {
			name := q.Name
			e = &kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: q.EntityType, Name: &name}}}
			byEntity[k] = e
			order = append(order, k)
		}
		e.Ops = append(e.Ops, kadm.AlterClientQuotaOp{Key: q.Key, Value: q.Value})
	}
	entries := make([]kadm.AlterClientQuotaEntry, 0, len(order))
	for _, k := range order {
		entries = append(entries, *byEntity[k])
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		return fmt.Errorf("AlterClientQuotas: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("AlterClientQuotas %v: %w (%s)", r.Entity, r.Err, r.ErrMessage)
		}
	}
	return nil
}

// CreateTopic creates a 1-partition RF 1 topic.
func CreateTopic(ctx context.Context, addr, topic string) error {
	cl, err := newClient(addr, "kbench-admin")
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// throttleHook records every throttle a client is told about.
type throttleHook struct {
	mu     sync.Mutex
	t0     time.Time
	max    time.Duration
	n      int
	first  time.Duration   // since t0; -1 until the first throttle
	writes map[int16]int64 // request bytes per API key
	nwrite map[int16]int64 // requests per API key
	reads  map[int16]int64
}

func newThrottleHook() *throttleHook {
	return &throttleHook{first: -1, writes: map[int16]int64{}, nwrite: map[int16]int64{}, reads: map[int16]int64{}}
}

func (h *throttleHook) start(t time.Time) {
	h.mu.Lock()
	h.t0 = t
	h.mu.Unlock()
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d <= 0 {
		return
	}
	h.n++
	h.max = max(h.max, d)
	if h.first < 0 && !h.t0.IsZero() {
		h.first = time.Since(h.t0)
	}
}

// OnBrokerWrite counts request bytes per API key (the 4-byte size prefix
// excluded, as the broker counts a request's size).
func (h *throttleHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err != nil || n < 4 {
		return
	}
	h.mu.Lock()
	h.writes[key] += int64(n - 4)
	h.nwrite[key]++
	h.mu.Unlock()
}

// OnBrokerRead counts response bytes per API key.
func (h *throttleHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	h.mu.Lock()
	h.reads[key] += int64(n)
	h.mu.Unlock()
}

type throttleStats struct {
	max   time.Duration
	n     int
	first time.Duration
}

func (h *throttleHook) stats() throttleStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return throttleStats{h.max, h.n, h.first}
}

// written returns the request bytes and the number of requests of key.
func (h *throttleHook) written(key int16) (bytes, requests int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes[key], h.nwrite[key]
}

func (h *throttleHook) read(key int16) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reads[key]
}
