package crash

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// apiVersionsFrame is a complete ApiVersions v0 request, size included.
func apiVersionsFrame(corr int32) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("crash"))
	return f.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), corr)
}

// readResponse reads one size-prefixed frame within d.
func readResponse(nc net.Conn, d time.Duration) ([]byte, error) {
	nc.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(nc, buf)
	return buf, err
}

// dialServed opens a connection and has one ApiVersions answered on it.
func dialServed(addr string) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if err := serveOne(nc); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// serveOne has one ApiVersions answered on nc.
func serveOne(nc net.Conn) error {
	nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(apiVersionsFrame(1)); err != nil {
		return err
	}
	_, err := readResponse(nc, 5*time.Second)
	return err
}

// goodClient is a well-behaved franz-go producer and consumer that keeps
// working while a test attacks the broker, and reports how it fared.
type goodClient struct {
	ops, failures atomic.Int64
	slowest       atomic.Int64 // nanoseconds of the slowest produce+fetch round
	lastErr       atomic.Value
	stop          context.CancelFunc
	done          chan struct{}
}

// startGoodClient produces one record and reads it back, over and over,
// every interval.
func startGoodClient(t *testing.T, addr, topic string, interval time.Duration) *goodClient {
	t.Helper()
	testkit.CreateTopic(t, kadm.NewClient(testkit.Client(t, addr)), topic, 1, nil)
	prod := testkit.Client(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(3))
	cons := testkit.Client(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	g := &goodClient{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			err := g.round(ctx, prod, cons, i)
			if ctx.Err() != nil {
				return
			}
			g.ops.Add(1)
			if err != nil {
				g.failures.Add(1)
				g.lastErr.Store(err)
			}
			if d := int64(time.Since(start)); d > g.slowest.Load() {
				g.slowest.Store(d)
			}
			time.Sleep(interval)
		}
	}()
	return g
}

func (g *goodClient) round(ctx context.Context, prod, cons *kgo.Client, i int) error {
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	want := fmt.Sprintf("good-%d", i)
	if err := prod.ProduceSync(rctx, &kgo.Record{Value: []byte(want)}).FirstErr(); err != nil {
		return fmt.Errorf("produce %s: %w", want, err)
	}
	for {
		fs := cons.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("fetch %s: %w", want, rctx.Err())
		}
		if err := fs.Err(); err != nil {
			return fmt.Errorf("fetch %s: %w", want, err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == want {
				return nil
			}
		}
	}
}

// finish stops the client and fails the test if it was ever refused or
// took longer than slowest for a round.
func (g *goodClient) finish(t *testing.T, slowest time.Duration) {
	t.Helper()
	g.stop()
	<-g.done
	t.Logf("well-behaved client: %d produce+fetch rounds, %d failed, slowest %v", g.ops.Load(), g.failures.Load(), time.Duration(g.slowest.Load()).Round(time.Millisecond))
	if g.ops.Load() == 0 {
		t.Errorf("the well-behaved client completed no round")
	}
	if n := g.failures.Load(); n > 0 {
		t.Errorf("the well-behaved client failed %d rounds; last: %v", n, g.lastErr.Load())
	}
	if d := time.Duration(g.slowest.Load()); d > slowest {
		t.Errorf("the well-behaved client's slowest round took %v, want under %v", d, slowest)
	}
}

// With queued.max.request.bytes=32 MiB, many clients each trickling a
// 16 MiB frame cannot make the broker hold more than about the bound in
// frames: it stops reading from connections while the bound is spent, and
// the senders back up in TCP. A well-behaved client is still served (its
// small requests do not wait for the budget), and the broker's peak RSS grows
// by a fraction of what the frames add up to. (Without the bound the
// same attack grows it by the sum: 24 × 16 MiB.)
func TestQueuedMaxRequestBytesBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kbroker binary")
	}
	const (
		bound     = 32 << 20
		frameSize = 16 << 20
		senders   = 24
		chunk     = 1 << 20
	)
	props := map[string]string{"queued.max.request.bytes": fmt.Sprint(bound)}
	if os.Getenv("KBROKER_CRASH_UNBOUNDED") != "" { // the control: what the bound prevents
		props = nil
	}
	dir := newBroker(t, props, false)
	p := run(t, dir)
	good := startGoodClient(t, p.Addr, "well-behaved", 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	baseline := p.statusBytes(t, "VmHWM")

	// A frame of an API key no broker knows: it is read whole, refused,
	// and the connection closed; the last byte comes after a pause, so a
	// sender holds its frame's bytes in the broker for a while.
	body := make([]byte, frameSize)
	binary.BigEndian.PutUint16(body, 0x7fff)
	var wg sync.WaitGroup
	var sent, refused atomic.Int64
	start := time.Now()
	for range senders {
		wg.Go(func() {
			nc, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer nc.Close()
			nc.SetWriteDeadline(time.Now().Add(40 * time.Second))
			msg := binary.BigEndian.AppendUint32(nil, frameSize)
			if _, err := nc.Write(msg); err != nil {
				t.Errorf("write size: %v", err)
				return
			}
			for off := 0; off < frameSize-1; off += chunk {
				if _, err := nc.Write(body[off:min(off+chunk, frameSize-1)]); err != nil {
					t.Errorf("write frame at %d: %v", off, err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			if _, err := nc.Write(body[frameSize-1:]); err != nil {
				t.Errorf("write last byte: %v", err)
				return
			}
			sent.Add(1)
			if _, err := readResponse(nc, 10*time.Second); testkit.ClosedByPeer(err) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	good.finish(t, 10*time.Second)
	p.Alive(t)
	peak := p.statusBytes(t, "VmHWM")
	growth := peak - baseline
	t.Logf("%d senders × %d MiB frames in %v: broker peak RSS %d MiB → %d MiB (+%d MiB; bound %d MiB, frames in all %d MiB)",
		senders, frameSize>>20, took.Round(time.Millisecond), baseline>>20, peak>>20, growth>>20, bound>>20, senders*frameSize>>20)
	if sent.Load() != senders || refused.Load() != senders {
		t.Errorf("%d of %d frames sent whole, %d refused with the connection closed; want all", sent.Load(), senders, refused.Load())
	}
	// The bound plus one frame in flight, twice over for garbage the
	// collector has not reclaimed yet, and slack for buffers and runtime.
	if limit := int64(2*(bound+frameSize) + 64<<20); growth > limit {
		t.Errorf("broker peak RSS grew by %d MiB under the attack, want at most %d MiB with queued.max.request.bytes=%d MiB", growth>>20, limit>>20, bound>>20)
	}
}

// 10,000 connections that say ApiVersions and then nothing are all held
// at a bounded cost in memory, and all closed once connections.max.idle.ms
// passes, while a franz-go client producing and fetching all along is
// served without a failure; afterwards the broker's connection count and
// goroutines are back where they were. max.connections and
// max.connections.per.ip are set above what the test opens, and a per-IP
// override for 127.0.0.2 is still enforced with the 10,000 open. The
// broker is its own process, so each side has the fds for its half of
// the connections.
func TestIdleConnectionsClosedWhileClientsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kbroker binary")
	}
	const (
		idle  = 8 * time.Second
		conns = 10_000
		// maxPerConn bounds the broker's RSS growth per idle connection.
		maxPerConn = 48 << 10
		otherIP    = "127.0.0.2"
		otherLimit = 5
	)
	dir := newBroker(t, map[string]string{
		"connections.max.idle.ms":          fmt.Sprint(idle.Milliseconds()),
		"max.connections":                  fmt.Sprint(conns + 200),
		"max.connections.per.ip":           fmt.Sprint(conns + 100),
		"max.connections.per.ip.overrides": fmt.Sprintf("%s:%d", otherIP, otherLimit),
	}, false)
	p := run(t, dir)
	// Polling more often than idle keeps the client's connections busy;
	// a connection of it that does fall idle is closed and redialled.
	good := startGoodClient(t, p.Addr, "busy", 50*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	before := p.scrape(t)
	rssBefore := p.statusBytes(t, "VmRSS")

	// A first wave, closed by the client at once, leaves the broker's heap
	// with freed memory to reuse, as a broker that has run for a while
	// has: what the second wave's connections hold is then touched (the
	// runtime zeroes reused memory), not just reserved.
	for _, ic := range openIdle(t, p.Addr, conns) {
		ic.nc.Close()
	}
	if !testkit.WaitFor(10*time.Second, func() bool {
		return p.scrape(t)["kbroker_open_connections"] <= before["kbroker_open_connections"]+2
	}) {
		t.Fatalf("the first wave's connections are still open: %v", p.scrape(t)["kbroker_open_connections"])
	}

	start := time.Now()
	idleConns := openIdle(t, p.Addr, conns)
	openedIn := time.Since(start)
	during := p.scrape(t)
	rssDuring := p.statusBytes(t, "VmRSS")
	perConn := float64(rssDuring-rssBefore) / conns
	t.Logf("%d idle connections opened in %v: open connections %v → %v, goroutines %v → %v, RSS %d → %d MiB (%.1f KiB per connection)",
		conns, openedIn.Round(time.Millisecond), before["kbroker_open_connections"], during["kbroker_open_connections"],
		before["go_goroutines"], during["go_goroutines"], rssBefore>>20, rssDuring>>20, perConn/1024)
	if got := during["kbroker_open_connections"] - before["kbroker_open_connections"]; got < conns {
		t.Errorf("broker counts %v more open connections with %d idle ones open", got, conns)
	}
	if perConn > maxPerConn {
		t.Errorf("broker RSS grew by %.1f KiB per idle connection, want at most %d KiB", perConn/1024, maxPerConn>>10)
	}
	checkPerIPOverride(t, p.Addr, otherIP, otherLimit)

	// Every idle connection must be closed by the broker once it has been
	// idle for connections.max.idle.ms (counted from its last byte, just
	// before it was served), not before, and within slack after.
	var closed, early atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(idle + 10*time.Second)
	for _, ic := range idleConns {
		wg.Go(func() {
			defer ic.nc.Close()
			ic.nc.SetReadDeadline(deadline)
			_, err := ic.nc.Read(make([]byte, 1))
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
			case err != nil:
				closed.Add(1)
				if time.Since(ic.served) < idle-500*time.Millisecond {
					early.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if closed.Load() != conns {
		t.Errorf("%d of %d idle connections closed by the broker within %v of opening the last, want all (connections.max.idle.ms=%d)",
			closed.Load(), conns, time.Since(start)-openedIn, idle.Milliseconds())
	}
	if early.Load() > 0 {
		t.Errorf("%d idle connections closed before connections.max.idle.ms", early.Load())
	}
	settled := testkit.WaitFor(5*time.Second, func() bool {
		m := p.scrape(t)
		return m["kbroker_open_connections"] <= before["kbroker_open_connections"]+2 && m["go_goroutines"] <= before["go_goroutines"]+10
	})

	after := p.scrape(t)
	good.finish(t, 5*time.Second)
	t.Logf("after the idle timeout: open connections %v, goroutines %v", after["kbroker_open_connections"], after["go_goroutines"])
	if !settled {
		t.Errorf("after closing the idle connections the broker has %v open connections and %v goroutines; it had %v and %v before them",
			after["kbroker_open_connections"], after["go_goroutines"], before["kbroker_open_connections"], before["go_goroutines"])
	}
}

// idleConn is a connection that was served one request and then said
// nothing more.
type idleConn struct {
	nc     net.Conn
	served time.Time
}

// openIdle opens n connections to addr, 64 at a time, each served one
// ApiVersions; it fails the test if any is not.
func openIdle(t *testing.T, addr string, n int) []idleConn {
	t.Helper()
	out := make([]idleConn, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nc, err := dialServed(addr)
			if err != nil {
				t.Errorf("idle connection not served: %v", err)
				return
			}
			mu.Lock()
			out = append(out, idleConn{nc, time.Now()})
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// checkPerIPOverride opens connections from ip (another loopback address)
// until one is refused, and wants exactly limit served, as
// max.connections.per.ip.overrides says.
func checkPerIPOverride(t *testing.T, addr, ip string, limit int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	var held []net.Conn
	defer func() {
		for _, nc := range held {
			nc.Close()
		}
	}()
	for len(held) <= limit {
		nc, err := d.Dial("tcp", addr)
		if err == nil {
			if err = serveOne(nc); err != nil {
				nc.Close()
			}
		}
		if err != nil {
			if len(held) < limit || !testkit.ClosedByPeer(err) {
				t.Errorf("connection %d from %s (override %d): %v", len(held)+1, ip, limit, err)
			}
			return
		}
		held = append(held, nc)
	}
	t.Errorf("%d connections from %s served with max.connections.per.ip.overrides=%s:%d", len(held), ip, ip, limit)
}

// max.connections, set as a dynamic cluster default, serves that many
// connections; the next one is not refused but held unanswered, as Kafka's
// acceptor waits for a connection slot, and is served once one closes.
func TestMaxConnectionsHoldsBeyondLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kbroker binary")
	}
	const limit = 20
	dir := newBroker(t, nil, false)
	p := run(t, dir)
	cl := testkit.Client(t, p.Addr)
	v := fmt.Sprint(limit)
	resps, err := kadm.NewClient(cl).AlterBrokerConfigs(testkit.Context(t, 10*time.Second), []kadm.AlterConfig{{Name: "max.connections", Value: &v}})
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("set max.connections: %v", err)
	}
	cl.Close()
	if !testkit.WaitFor(5*time.Second, func() bool { return p.scrape(t)["kbroker_open_connections"] == 0 }) {
		t.Fatalf("the admin client's connections are still open: %v", p.scrape(t)["kbroker_open_connections"])
	}

	var held []net.Conn
	defer func() {
		for _, nc := range held {
			nc.Close()
		}
	}()
	for i := range limit {
		nc, err := dialServed(p.Addr)
		if err != nil {
			t.Fatalf("connection %d of max.connections=%d not served: %v", i+1, limit, err)
		}
		held = append(held, nc)
	}
	extra, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("connection %d: %v, want it queued, not refused", limit+1, err)
	}
	defer extra.Close()
	extra.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Write(apiVersionsFrame(1)); err != nil {
		t.Fatal(err)
	}
	var timeout net.Error
	if _, err := readResponse(extra, time.Second); !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("connection %d with max.connections=%d: %v, want it held unanswered", limit+1, limit, err)
	}
	held[0].Close()
	held = held[1:]
	if _, err := readResponse(extra, 5*time.Second); err != nil {
		t.Errorf("the held connection after one of %d closed: %v, want it served", limit, err)
	}
}

// Before a SASL listener has authenticated a connection, a frame is at
// most sasl.server.max.receive.size (512 KiB) as in Kafka's
// SaslServerAuthenticator: a larger size prefix closes the connection
// before anything is allocated, so a client without credentials cannot
// make the broker hold socket.request.max.bytes (100 MiB) per connection.
// Authenticated clients still send large frames.
func TestUnauthenticatedFramesAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kbroker binary")
	}
	dir := newBroker(t, crashProps, true)
	p := run(t, dir)
	for _, size := range []uint32{512<<10 + 1, 8 << 20, 100 << 20} {
		nc, err := net.DialTimeout("tcp", p.SASLAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// A valid SaslHandshake header, as a client would start, with a
		// size prefix far beyond any SASL message.
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("crash")).AppendRequest(nil, kmsg.NewPtrSASLHandshakeRequest(), 1)
		binary.BigEndian.PutUint32(frame, size)
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		_, err = readResponse(nc, 3*time.Second)
		nc.Close()
		if !testkit.ClosedByPeer(err) {
			t.Errorf("unauthenticated frame of %d bytes: %v, want the connection closed at once", size, err)
		}
	}
}

// Every way a request can end gives its bytes back to
// queued.max.request.bytes: handled, refused as unparsable, cut off in the
// middle of its frame, or queued behind a request whose connection
// closes. The bound here is smaller than what each of the hundreds of
// attack connections takes, so a single path that kept its bytes would
// leave the broker reading from nobody, and the producers at the end would
// time out. In-process, so -race sees the pool too.
func TestQueuedRequestBytesAreAlwaysReturned(t *testing.T) {
	const bound = 64 << 10
	b := brokertest.Start(t, config.Properties{"queued.max.request.bytes": fmt.Sprint(bound)})
	addr := b.Addr()
	testkit.CreateTopic(t, kadm.NewClient(testkit.Client(t, addr)), "returned", 2, nil)

	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range 300 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			switch i % 3 {
			case 0: // cut off mid-frame
				nc.Write(binary.BigEndian.AppendUint32(nil, 100<<10))
				nc.Write(make([]byte, 10<<10))
			case 1: // a whole frame of an unknown API, refused
				frame := binary.BigEndian.AppendUint32(nil, 40<<10)
				frame = binary.BigEndian.AppendUint16(frame, 0x7fff)
				nc.Write(append(frame, make([]byte, 40<<10-2)...))
				readResponse(nc, 10*time.Second)
			case 2: // good requests pipelined, then gone without reading
				for c := range 8 {
					nc.Write(apiVersionsFrame(int32(c)))
				}
			}
		})
	}
	wg.Wait()

	ctx := testkit.Context(t, 20*time.Second)
	var pwg sync.WaitGroup
	for w := range 4 {
		cl := testkit.Client(t, addr, kgo.DefaultProduceTopic("returned"), kgo.ProducerBatchMaxBytes(48<<10))
		pwg.Go(func() {
			value := make([]byte, 8<<10)
			for i := range 200 {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					t.Errorf("producer %d record %d after the attacks: %v", w, i, err)
					return
				}
			}
		})
	}
	pwg.Wait()
}

// queued.max.request.bytes is one budget for all connections, and a huge
// frame is let in whenever any of it is left. Connections that trickle
// huge frames and never finish them must still not keep the rest waiting:
// a client of small requests (produce one record, fetch it) goes on being
// served while they hold the budget and more. In-process, so -race sees
// the accounting.
func TestTricklingHugeFramesDoNotStarveSmallRequests(t *testing.T) {
	const (
		bound     = 4 << 20
		frameSize = 8 << 20 // each over the whole budget
		hostile   = 3
		attack    = 3 * time.Second
	)
	b := brokertest.Start(t, config.Properties{"queued.max.request.bytes": fmt.Sprint(bound)})
	good := startGoodClient(t, b.Addr(), "starved", 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var conns []net.Conn
	// Ending the attack closes the connections, so a broker that starves
	// the client lets it finish and the test fails rather than hangs.
	endAttack := func() {
		stop()
		for _, nc := range conns {
			nc.Close()
		}
		wg.Wait()
	}
	defer endAttack()
	for range hostile {
		nc, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		wg.Go(func() {
			// A size, then a kilobyte now and then: never the whole
			// frame, never idle.
			nc.Write(binary.BigEndian.AppendUint32(nil, frameSize))
			for ctx.Err() == nil {
				nc.SetWriteDeadline(time.Now().Add(time.Second))
				nc.Write(make([]byte, 1<<10))
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the first frame has taken the budget
	opsBefore := good.ops.Load()
	time.Sleep(attack)
	served := good.ops.Load() - opsBefore
	endAttack()
	good.finish(t, 2*time.Second)
	t.Logf("%d connections trickling %d MiB frames against a %d MiB budget: the small-request client completed %d rounds in %v",
		hostile, frameSize>>20, bound>>20, served, attack)
	if served < 10 {
		t.Errorf("the small-request client completed %d rounds in %v while huge frames held queued.max.request.bytes, want at least 10", served, attack)
	}
}

// liveHeap has the broker collect its garbage (pprof's heap?gc=1) and
// returns the heap the collection found reachable.
func (p proc) liveHeap(t *testing.T) float64 {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + p.MetricsAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("forcing a collection: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return p.scrape(t)["go_gc_heap_live_bytes"]
}

// A consumer's fetch waits in the broker for up to max_wait_ms when there is
// nothing to return, and a broker serves many such consumers at once. While
// a fetch waits, its connection must not hold a read buffer (64 KiB each):
// 400 waiting fetches may raise the live heap by a few KiB each, not by a
// buffer each.
func TestLongPollingFetchesHoldNoReadBuffers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kbroker binary")
	}
	const (
		conns      = 400
		maxPerConn = 16 << 10
		topic      = "longpoll"
	)
	p := run(t, newBroker(t, nil, false))
	adm := kadm.NewClient(testkit.Client(t, p.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	fetch.MaxWaitMillis = 30_000
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	fetch.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("crash")).AppendRequest(nil, fetch, 2)

	before := p.liveHeap(t)
	var open []net.Conn
	defer func() {
		for _, nc := range open {
			nc.Close()
		}
	}()
	for range conns {
		nc, err := dialServed(p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, nc)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // every fetch read and waiting
	after := p.liveHeap(t)
	for _, nc := range open[:3] { // still waiting: nothing was answered
		nc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a long-polling fetch was answered early: %v", err)
		}
	}
	perConn := (after - before) / conns
	t.Logf("%d waiting fetches: live heap %.1f → %.1f MiB (%.1f KiB per connection)", conns, before/(1<<20), after/(1<<20), perConn/1024)
	if perConn > maxPerConn {
		t.Errorf("live heap grew by %.1f KiB per waiting fetch, want at most %d KiB", perConn/1024, maxPerConn>>10)
	}
}
