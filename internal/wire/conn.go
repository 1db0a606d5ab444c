package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// Conn is one client connection. Handlers receive it to learn who is asking
// (listener, address, principal) and to keep per-connection state.
type Conn struct {
	ID       uint64
	Listener string // listener name, e.g. PLAINTEXT
	Protocol string // its security protocol
	Remote   net.Addr
	// Principal is the authenticated identity ("User:ANONYMOUS" until a
	// SASL exchange or TLS certificate says otherwise).
	Principal string
	// ClientSoftware is what the client named itself in ApiVersions v3+.
	ClientSoftwareName, ClientSoftwareVersion string

	nc  net.Conn
	srv *Server
	log *slog.Logger

	// mutedUntil is when this connection may next be served (unix nanos):
	// a throttled client's next request waits until then (KIP-219).
	mutedUntil atomic.Int64

	sec connSecurity // TLS and SASL state (sasl.go, tls.go)

	// held is what this connection's requests hold of the server's
	// request memory, read or queued and not yet handled.
	held atomic.Int64
}

// Mute stops serving this connection's next request for d, as Kafka mutes
// a throttled channel. Handlers call it for throttles that have no response
// to carry them (acks=0 produce); throttles set in a response are applied
// by the connection itself.
func (c *Conn) Mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted sleeps until the connection is no longer muted, or ctx ends.
func (c *Conn) waitUnmuted(ctx context.Context) {
	d := time.Until(time.Unix(0, c.mutedUntil.Load()))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// applyThrottle honours the throttle time a handler put in resp: clients
// of versions before KIP-219 get the response late; newer ones get it at
// once and back off themselves, and the connection is muted either way.
func (c *Conn) applyThrottle(ctx context.Context, resp kmsg.Response) {
	tr, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return
	}
	ms, after := tr.Throttle()
	if ms <= 0 {
		return
	}
	c.Mute(time.Duration(ms) * time.Millisecond)
	if !after {
		c.waitUnmuted(ctx)
	}
}

// RemoteIP is the client's IP address as a string.
func (c *Conn) RemoteIP() string {
	if tcp, ok := c.Remote.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, _ := net.SplitHostPort(c.Remote.String())
	return host
}

// serve runs the connection until the client leaves, a request is bad, or
// the server drains.
//
// One goroutine reads a request, handles it and answers it before it reads
// the next, so responses leave in request order. This is Kafka's model too:
// it mutes a channel from the moment a request arrives until its response
// is sent. A pipelining client's next requests wait in the socket buffer
// meanwhile. Reading ahead on a second goroutine was measured (B3, session
// 4) to add about 25 µs to every serial produce for the hand-off between the
// two, and it bought no throughput, even for producers with five requests
// in flight.
func (c *Conn) serve(ctx context.Context) {
	defer c.nc.Close()
	if err := c.handshakeTLS(ctx); err != nil {
		c.logLimited(slog.LevelInfo, "closing connection", "err", err)
		return
	}
	dr := &deadlineReader{c: c, ctx: ctx}
	r := &pooledReader{src: dr}
	defer r.release()
	w := &pooledWriter{dst: progressWriter{c: c, ctx: ctx}}
	defer w.release()
	for {
		// A throttled connection is not read until its throttle has
		// passed, as Kafka mutes the channel.
		c.waitUnmuted(ctx)
		req, err := c.readRequest(ctx, r, dr)
		if err != nil {
			// Answers held back for a pipelined request still go out,
			// even when that request turned out bad.
			w.Flush()
			// While the server drains, every read ends in an error.
			if !isClosed(err) && ctx.Err() == nil {
				c.logLimited(slog.LevelInfo, "closing connection", "err", err)
			}
			return
		}
		err = c.answer(ctx, req, r, w)
		c.release(req)
		if err != nil {
			// A client that leaves before taking its answer is not news.
			if !errors.Is(err, errSend) {
				c.logLimited(slog.LevelInfo, "closing connection", "api", kmsg.NameForKey(req.Key), "version", req.Version, "err", err)
			}
			return
		}
		if c.sec.closeAfter {
			return
		}
	}
}

// errSend marks a failure to send an answer: the client left or stopped
// reading for connections.max.idle.ms.
var errSend = errors.New("sending the response")

// sendFailed marks err, if any, as a failure to send (errSend).
func sendFailed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errSend, err)
}

// answer handles one request and writes its response. The response is
// flushed unless the client has already sent the next request whole, so
// that a pipelining client's answers leave in one write. An error closes
// the connection.
func (c *Conn) answer(ctx context.Context, req *Request, r *pooledReader, w *pooledWriter) error {
	start := time.Now()
	if err := c.admit(req); err != nil {
		return err
	}
	if req.Key == rawSASLKey {
		buf, err := c.serveRaw(req)
		if err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return sendFailed(err)
		}
		return sendFailed(w.Flush())
	}
	resp, err := c.handle(ctx, req)
	if err != nil {
		return err
	}
	c.release(req) // the request's bytes are handled; the response's are not counted
	if resp != nil {
		c.applyThrottle(ctx, resp)
		if err := c.writeResponse(ctx, w, req, resp); err != nil {
			return err
		}
	}
	if !r.frameBuffered() || c.sec.closeAfter {
		if err := w.Flush(); err != nil {
			return sendFailed(err)
		}
	}
	c.srv.observe(req, time.Since(start))
	releaseFrame(req)
	return nil
}

// handle runs the handler, turning a panic into a closed connection so one
// bad request can never take the broker down.
func (c *Conn) handle(ctx context.Context, req *Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", "api", kmsg.NameForKey(req.Key), "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error handling %s", kmsg.NameForKey(req.Key))
		}
	}()
	return c.srv.handler.Handle(ctx, c, req)
}

// readRequest reads and decodes the next frame. It fails at EOF, on a bad
// frame, when the connection has been idle for connections.max.idle.ms, when
// a frame is not complete within kbroker.request.read.timeout.ms of its first
// byte, and once the server drains.
func (c *Conn) readRequest(ctx context.Context, r *pooledReader, dr *deadlineReader) (*Request, error) {
	dr.frameEnd = time.Time{}
	var size [4]byte
	got, err := r.readSizeStart(size[:])
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("idle for longer than connections.max.idle.ms")
		}
		return nil, err
	}
	// The frame's clock starts at its first byte: from here a client
	// trickling bytes keeps the connection active (idle expiry never
	// fires) but cannot keep a partial frame, and its buffer, open.
	dr.startFrame(c.srv.requestReadTimeout)
	if _, err := r.readSize(size[got:]); err != nil {
		return nil, dr.frameError(ctx, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	// Refuse before allocating: a size prefix alone must not make us
	// reserve memory (Kafka's InvalidReceiveException).
	if lo, hi := c.frameBounds(); n < lo || n > hi {
		return nil, fmt.Errorf("frame of %d bytes is outside [%d, %d] (socket.request.max.bytes, or the SASL token limit)", n, lo, hi)
	}
	waited, err := c.reserve(ctx, int(n))
	if err != nil {
		return nil, err
	}
	// Waiting for the broker's request memory is not the client's time.
	dr.extendFrame(waited)
	frame := bufpool.Get(int(n))
	if _, err := io.ReadFull(r, frame); err != nil {
		c.unreserve(int(n))
		return nil, dr.frameError(ctx, err)
	}
	r.releaseIfEmpty()
	var req *Request
	if c.takeRaw() {
		req = rawRequest(frame)
	} else {
		var err error
		if req, err = parseRequest(frame, c.srv.handler); err != nil {
			// Nothing refers to a frame that did not parse: reuse it,
			// so a stream of bad frames does not pile up garbage.
			bufpool.Put(frame)
			c.unreserve(int(n))
			return nil, err
		}
	}
	req.queued = int(n)
	return req, nil
}

// smallRequests is how many bytes of requests a connection may always
// have read, whatever queued.max.request.bytes has left: the budget is
// shared, and a few connections trickling huge frames (each let in while
// any budget was left, each holding its bytes until its last byte comes)
// would otherwise keep every other client waiting, for as long as they
// keep it up. With it a client of ordinary small requests (metadata,
// fetch, commits, small produces) is always served; the bytes still count
// against the budget, which then holds off big frames only. What the
// broker holds is bounded by the budget, one frame over it, and this per
// connection.
const smallRequests = 16 << 10

// reserve takes n bytes of the server's request memory for the next
// frame, before it is read: at once while the connection holds little
// (smallRequests), else waiting while the broker holds too many unhandled
// bytes (queued.max.request.bytes), not reading, so the client's sends
// back up in TCP. It fails only when ctx ends. waited is how long it
// waited (0 on the fast path, which reads no clock).
func (c *Conn) reserve(ctx context.Context, n int) (waited time.Duration, err error) {
	if c.held.Load()+int64(n) <= smallRequests {
		c.srv.queued.take(n)
	} else {
		start := time.Now()
		if err := c.srv.queued.reserve(ctx, n); err != nil {
			return 0, err
		}
		waited = time.Since(start)
	}
	c.held.Add(int64(n))
	return waited, nil
}

// unreserve gives back the bytes of a frame that never became a request.
func (c *Conn) unreserve(n int) {
	c.held.Add(-int64(n))
	c.srv.queued.give(n)
}

// release gives back the bytes req holds, once; only the goroutine that
// owns req calls it.
func (c *Conn) release(req *Request) {
	if req != nil {
		c.held.Add(-int64(req.queued))
		c.srv.queued.release(req)
	}
}

// deadlineReader sets the read deadline before every read from the socket,
// so that a connection is idle when no byte arrives for
// connections.max.idle.ms, between frames or in the middle of one (Kafka's
// idle expiry counts any socket activity; a client stalled mid-frame has
// none), and a frame must be complete within kbroker.request.read.timeout.ms
// of its first byte (a client trickling a byte at a time is never idle).
type deadlineReader struct {
	c        *Conn
	ctx      context.Context
	frameEnd time.Time // zero between frames, or with no frame bound
	timeout  time.Duration
}

// startFrame starts the clock of a frame whose first byte has arrived;
// timeout ≤ 0: no bound.
func (r *deadlineReader) startFrame(timeout time.Duration) {
	r.timeout = timeout
	if timeout > 0 {
		r.frameEnd = time.Now().Add(timeout)
	}
}

// extendFrame gives the frame back time the broker spent not reading it.
func (r *deadlineReader) extendFrame(d time.Duration) {
	if d > 0 && !r.frameEnd.IsZero() {
		r.frameEnd = r.frameEnd.Add(d)
	}
}

// frameError names a read error in the middle of a frame that the frame
// bound caused, so the connection's close says why (once: the connection
// ends with it); other errors pass through.
func (r *deadlineReader) frameError(ctx context.Context, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil && !r.frameEnd.IsZero() && !time.Now().Before(r.frameEnd) {
		return fmt.Errorf("a request frame took longer than kbroker.request.read.timeout.ms (%v) to arrive", r.timeout)
	}
	return err
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	var d time.Time
	if idle := r.c.srv.idleTimeout; idle > 0 {
		d = time.Now().Add(idle)
	}
	if !r.frameEnd.IsZero() && (d.IsZero() || r.frameEnd.Before(d)) {
		d = r.frameEnd
	}
	r.c.nc.SetReadDeadline(d)
	// Checked after setting the deadline: Server.Close cancels before it
	// wakes readers with a past deadline, so a read cannot miss both.
	if r.ctx.Err() != nil {
		return 0, os.ErrDeadlineExceeded
	}
	return r.c.nc.Read(p)
}

// progressWriter writes to the socket in chunks, each of which must go out
// within connections.max.idle.ms: Kafka expires a connection that has had
// no socket activity for that long, and one blocked on a send to a client
// that stopped reading has none. Without it such a client would hold its
// connection, and the server's Close, forever. Once the server drains, each
// chunk gets at most drainWriteTimeout.
type progressWriter struct {
	c   *Conn
	ctx context.Context
}

// writeChunk is how much must make progress within one deadline, so a slow
// reader of a large response is not taken for a stuck one. Each chunk is
// one Write (and one deadline set): at 64 KiB, a 64 MiB fetch answer took
// a thousand of them, and B2 fetched 1.7× kfake's rate against 2.1× with
// 1 MiB chunks (broker CPU per MB −26 %). A live client takes 1 MiB well
// within even the 3 s a draining broker allows.
const writeChunk = 1 << 20

// drainWriteTimeout is how long a draining server waits for a client to take
// each chunk of the answers it is owed.
const drainWriteTimeout = 3 * time.Second

func (w progressWriter) Write(p []byte) (n int, err error) {
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		w.c.nc.SetWriteDeadline(w.deadline())
		m, err := w.c.nc.Write(chunk)
		n, p = n+m, p[m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w progressWriter) deadline() time.Time {
	d := w.c.srv.idleTimeout
	if w.ctx.Err() != nil && (d <= 0 || d > drainWriteTimeout) {
		d = drainWriteTimeout
	}
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}
