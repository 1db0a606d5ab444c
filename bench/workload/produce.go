package workload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// counter tallies acknowledged records from produce promises.
type counter struct {
	records, bytes, errors atomic.Int64
	inWindow               atomic.Bool // errors outside the window are not the broker's fault
	firstErr               sync.Once
	err                    string
}

func (c *counter) promise(r *kgo.Record, err error) {
	if err != nil {
		if c.inWindow.Load() {
			c.errors.Add(1)
			c.firstErr.Do(func() { c.err = err.Error() })
		}
		return
	}
	c.records.Add(1)
	c.bytes.Add(int64(len(r.Value)))
}

type snapshot struct {
	at             time.Time
	records, bytes int64
}

func (c *counter) snap() snapshot {
	return snapshot{time.Now(), c.records.Load(), c.bytes.Load()}
}

// Produce is B1: one producer keeps its buffer full for Warmup+Duration and
// we count payload bytes acknowledged inside the Duration window. Counting
// acknowledgements (not sends) is what the plan asks for: a broker that
// buffers without answering gains nothing.
func Produce(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	opts := withAcks(producerOpts(spec.Addr, spec.Topic, spec.RecordBytes, spec.Idempotent), spec)
	if spec.ClientID != "" {
		opts = append(opts, kgo.ClientID(spec.ClientID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)

	var c counter
	value := payload(spec.RecordBytes)
	pctx, stop := context.WithCancel(ctx)
	defer stop()

	// Window edges are taken by timers, not by the produce loop, because
	// Produce blocks while the buffer is full and would blur the edges.
	var begin, end snapshot
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		select {
		case <-time.After(spec.Warmup):
		case <-pctx.Done():
			return
		}
		c.inWindow.Store(true)
		begin = c.snap()
		mark(MarkStart)
		select {
		case <-time.After(spec.Duration):
		case <-pctx.Done():
			return
		}
		end = c.snap()
		c.inWindow.Store(false)
		mark(MarkEnd)
	}()

	for pctx.Err() == nil {
		cl.Produce(pctx, &kgo.Record{Value: value}, c.promise)
	}
	<-done
	if end.at.IsZero() {
		return Result{}, errors.Join(errors.New("produce run ended before its window closed"), ctx.Err())
	}
	return Result{
		Records:  end.records - begin.records,
		Bytes:    end.bytes - begin.bytes,
		Seconds:  end.at.Sub(begin.at).Seconds(),
		Errors:   c.errors.Load(),
		FirstErr: c.err,
	}, nil
}

// closeBounded closes a client without letting a wedged broker hang the
// load process: Close waits for in-flight requests.
func closeBounded(cl *kgo.Client) {
	done := make(chan struct{})
	go func() { cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
