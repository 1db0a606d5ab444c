package txn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
	"kbroker/internal/meta"
	"kbroker/internal/record"
	"kbroker/internal/storage"
	"kbroker/internal/testkit"
)

// harness is a transaction coordinator with one shard over a real
// `__transaction_state` log, producer ids from a real bbolt store, and
// markers written into real partition logs, on a clock the test moves.
type harness struct {
	t     *testing.T
	dir   string
	clock *coordinator.ManualClock
	store *meta.Store
	cfg   Config
	c     *Coordinator
	log   *storage.Log

	mu   sync.Mutex
	data map[TopicPartition]*storage.Log
	// hold, while open, keeps every marker from being written.
	hold chan struct{}
}

func testConfig() Config {
	return Config{Partitions: 1, MaxTimeout: 15 * time.Minute, IDExpiration: 7 * 24 * time.Hour,
		AbortCheck: 10 * time.Second, ExpirationCheck: time.Hour}
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: coordinator.NewManualClock(time.Unix(1_700_000_000, 0)),
		store: testkit.BoltStore(t), cfg: testConfig(), data: map[TopicPartition]*storage.Log{}}
	h.open()
	t.Cleanup(func() {
		h.close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, l := range h.data {
			l.Close()
		}
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	l, err := storage.Open(filepath.Join(h.dir, Topic+"-0"), storage.DefaultConfig())
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = l
	h.c = New(h.cfg, NewProducerIDs(h.store), h.writeMarker, h.clock, nil)
	h.c.Load(0, 3, l)
	rs := h.c.rt.Shard(0)
	for deadline := time.Now().Add(5 * time.Second); !rs.Loaded(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatal("shard did not load")
		}
	}
}

func (h *harness) close() {
	if h.c != nil {
		h.c.Close()
		h.log.Close()
		h.c = nil
	}
}

// restart stops the coordinator and loads it again from its log.
func (h *harness) restart() {
	h.close()
	h.open()
}

// holdMarkers keeps markers from being written until the returned
// function is called.
func (h *harness) holdMarkers() (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	h.hold = ch
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.hold == ch {
			close(ch)
			h.hold = nil
		}
	}
}

func (h *harness) dataLog(tp TopicPartition) *storage.Log {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.data[tp]
	if l == nil {
		var err error
		if l, err = storage.Open(filepath.Join(h.dir, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)), storage.DefaultConfig()); err != nil {
			h.t.Error(err)
			return nil
		}
		h.data[tp] = l
	}
	return l
}

// writeMarker appends the marker's control batch to the partition log,
// as the broker's wiring does.
func (h *harness) writeMarker(ctx context.Context, m Marker) error {
	h.mu.Lock()
	hold := h.hold
	h.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if m.Topic == "gone" {
		return ErrPartitionGone
	}
	l := h.dataLog(TopicPartition{m.Topic, m.Partition})
	if l == nil {
		return errors.New("no log")
	}
	raw, err := record.EndTxnMarker(m.Commit, m.CoordinatorEpoch, m.ProducerID, m.ProducerEpoch, h.clock.Now().UnixMilli())
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(raw[0:8], uint64(l.LogEndOffset()))
	_, err = l.AppendAsFollower(raw, h.clock.Now())
	return err
}

// marker is a control record read back from a partition log.
type marker struct {
	commit     bool
	pid        int64
	epoch      int16
	coordEpoch int32
}

func (h *harness) markers(tp TopicPartition) []marker {
	h.t.Helper()
	l := h.dataLog(tp)
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []marker
	raw := res.Records
	for len(raw) >= 61 {
		size := int(binary.BigEndian.Uint32(raw[8:12])) + 12
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			h.t.Fatal(err)
		}
		raw = raw[size:]
		if b.Attributes&0x20 == 0 {
			continue
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(b.Records); err != nil {
			h.t.Fatal(err)
		}
		var k kmsg.ControlRecordKey
		var v kmsg.EndTxnMarker
		if k.ReadFrom(rec.Key) != nil || v.ReadFrom(rec.Value) != nil {
			h.t.Fatal("unreadable control record")
		}
		out = append(out, marker{commit: k.Type == kmsg.ControlRecordKeyTypeCommit, pid: b.ProducerID, epoch: b.ProducerEpoch, coordEpoch: v.CoordinatorEpoch})
	}
	return out
}

func (h *harness) ctx() context.Context { return testkit.Context(h.t, 5*time.Second) }

func (h *harness) init(id string, pid int64, epoch int16) InitResult {
	h.t.Helper()
	return h.c.InitProducerID(h.ctx(), id, 60_000, pid, epoch)
}

// mustInit is InitProducerId succeeding.
func (h *harness) mustInit(id string) InitResult {
	h.t.Helper()
	r := h.init(id, -1, -1)
	if r.Err != nil {
		h.t.Fatalf("InitProducerId(%s): %v", id, r.Err)
	}
	return r
}

func (h *harness) add(id string, r InitResult, tps ...TopicPartition) *kerr.Error {
	return h.c.AddPartitions(h.ctx(), id, r.ProducerID, r.Epoch, tps)
}

func (h *harness) end(id string, r InitResult, commit bool) *kerr.Error {
	return h.c.EndTxn(h.ctx(), id, r.ProducerID, r.Epoch, commit, TV1).Err
}

func (h *harness) describe(id string) Described { return h.c.Describe(h.ctx(), id) }

// waitState waits until id is in want (markers complete off the loop).
func (h *harness) waitState(id string, want State) Described {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := h.describe(id)
		if d.Err == nil && d.State == want {
			return d
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: state %v (err %v), want %v", id, d.State, d.Err, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// advance moves the clock and waits until the shard has run what fell due.
func (h *harness) advance(d time.Duration) {
	h.clock.Advance(d)
	done := make(chan struct{})
	if err := h.c.rt.Shard(0).Do(func() { close(done) }); err != nil {
		h.t.Fatal(err)
	}
	<-done
}

func is(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}
