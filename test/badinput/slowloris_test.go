package badinput

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// frameBoundCloses counts the log records that name the frame bound, at
// any level, from any logger.
type frameBoundCloses struct{ n *atomic.Int32 }

func (h frameBoundCloses) Enabled(context.Context, slog.Level) bool { return true }
func (h frameBoundCloses) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h frameBoundCloses) WithGroup(string) slog.Handler            { return h }
func (h frameBoundCloses) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if strings.Contains(a.Value.String(), "kbroker.request.read.timeout.ms") {
			h.n.Add(1)
		}
		return true
	})
	return nil
}

// trickle writes b one byte every interval until the broker closes the
// connection or stop is closed.
func trickle(c *testkit.RawConn, b []byte, interval time.Duration, stop <-chan struct{}) {
	for _, x := range b {
		c.Conn.SetWriteDeadline(time.Now().Add(testkit.IOTimeout))
		if _, err := c.Conn.Write([]byte{x}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(interval):
		}
	}
}

// A client trickling a byte every 0.5 s is never idle, so only
// kbroker.request.read.timeout.ms ends its frame: the connection is closed
// once the bound has passed since the frame's first byte (in the size
// prefix or in the body), and logged once. Other clients are served
// meanwhile, and the bound at -1 lets the trickler be.
func TestSlowlorisFrameIsClosedWithinTheBound(t *testing.T) {
	const bound = 2 * time.Second
	closes := frameBoundCloses{n: &atomic.Int32{}}
	addr := brokertest.Start(t, config.Properties{"kbroker.request.read.timeout.ms": "2000"},
		broker.WithLogHandler(closes, slog.LevelDebug)).Addr()
	s := seed(t, addr)
	frame := testkit.Frame(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "slowloris", ClientSoftwareVersion: "1"}, 1)

	for i, tc := range []struct {
		name   string
		atOnce []byte // sent at once, before the trickle
	}{
		{"size prefix", nil},
		{"body", frame[:6]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := closes.n.Load()
			// Each case from a loopback address of its own: the broker logs
			// a repeated line from one client IP once per interval.
			c := dialFrom(t, fmt.Sprintf("127.0.0.%d", 10+i), addr)
			stop := make(chan struct{})
			defer close(stop)
			start := time.Now()
			if tc.atOnce != nil {
				c.Write(tc.atOnce)
			}
			go trickle(c, frame[len(tc.atOnce):], 500*time.Millisecond, stop)
			c.ExpectClosed(bound + 3*time.Second)
			if took := time.Since(start); took < bound-100*time.Millisecond {
				t.Fatalf("closed after %v, before the %v bound", took, bound)
			}
			if !testkit.WaitFor(time.Second, func() bool { return closes.n.Load() == before+1 }) {
				t.Fatalf("%d log lines name kbroker.request.read.timeout.ms, want 1", closes.n.Load()-before)
			}
		})
	}
	s.check(t)

	t.Run("disabled", func(t *testing.T) {
		addr := brokertest.Start(t, config.Properties{"kbroker.request.read.timeout.ms": "-1"}).Addr()
		c := testkit.Dial(t, addr)
		stop := make(chan struct{})
		defer close(stop)
		go trickle(c, frame, 500*time.Millisecond, stop)
		c.ExpectOpen(bound + time.Second)
	})
}

// An honest client sending a large produce slowly but steadily, in full
// within the bound, is answered.
func TestSteadyLargeFrameIsNotCutOff(t *testing.T) {
	addr := brokertest.Start(t, config.Properties{"kbroker.request.read.timeout.ms": "3000"}).Addr()
	ctx := testkit.Context(t, 10*time.Second)
	if _, err := kadm.NewClient(newClient(t, addr)).CreateTopic(ctx, 1, 1, nil, "steady"); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 900<<10) // under message.max.bytes
	frame := testkit.Frame(produceRequest(9, 1, "steady", 0, batch(value)), 1)
	c := testkit.Dial(t, addr)
	start := time.Now()
	const chunks = 40 // one every 50 ms: two seconds in all
	step := len(frame)/chunks + 1
	for off := 0; off < len(frame); off += step {
		c.Write(frame[off:min(off+step, len(frame))])
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("the frame took %v to send, not slow enough to test anything", took)
	}
	resp := c.Read(produceRequest(9, 1, "steady", 0, nil), 1).(*kmsg.ProduceResponse)
	wantCode(t, "a steady 900 KiB produce", resp.Topics[0].Partitions[0].ErrorCode, &kerr.Error{Code: 0})
}

// dialFrom connects to addr from the loopback address ip.
func dialFrom(t *testing.T, ip, addr string) *testkit.RawConn {
	t.Helper()
	d := net.Dialer{Timeout: testkit.IOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { nc.Close() })
	return testkit.NewRawConn(t, nc)
}
