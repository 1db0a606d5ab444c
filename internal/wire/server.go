package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/metrics"
)

// Handler answers decoded requests. A nil response with a nil error sends
// nothing (acks=0 produce); an error closes the connection and nothing else.
type Handler interface {
	Versions
	Handle(ctx context.Context, c *Conn, req *Request) (kmsg.Response, error)
}

// ListenerSpec is one address to listen on.
type ListenerSpec struct {
	Name, Protocol, Addr string
	// TLS is set on SSL and SASL_SSL listeners (tls.go).
	TLS *tls.Config
	// SASL is set on SASL_PLAINTEXT and SASL_SSL listeners (sasl.go).
	SASL *auth.Mechanisms
}

// ListenerSecurity is what a listener's new connections are secured with.
type ListenerSecurity struct {
	TLS  *tls.Config
	SASL *auth.Mechanisms
}

// Limits bound how many connections the server holds (Kafka's
// ConnectionQuotas). MaxConnections (max.connections) and MaxPerListener
// (listener.name.<l>.max.connections) are slots: a connection beyond them
// is not refused, its listener's accept loop holds it, accepting nothing
// else, until a connection closes or the limits rise (Kafka's
// waitForConnectionSlot), so clients queue in the listen backlog.
// MaxPerIP and PerIPOverrides (max.connections.per.ip and its overrides)
// refuse: the connection is closed at once.
type Limits struct {
	MaxConnections int
	MaxPerListener map[string]int // absent: no limit of the listener's own
	// InterBroker is the listener that max.connections does not hold back
	// ("" when there is none or only one listener), as Kafka protects the
	// inter-broker listener so that brokers can always reach each other.
	// Kafka also closes the least recently used connection of another
	// listener to get back under max.connections; kbroker does not, so the
	// other listeners wait until the total is back under it.
	InterBroker    string
	MaxPerIP       int
	PerIPOverrides map[string]int
}

// AcceptRate is the broker-wide and listener-wide connection creation rate
// (max.connection.creation.rate). The accept loop of a listener waits in
// Admit, accepting nothing else, until the rates allow the connection it
// holds: over the rate, clients queue in the listen backlog rather than
// being refused. Admit fails only when ctx ends. Refund takes back a
// connection that is refused after all (over its IP's rate).
type AcceptRate interface {
	Admit(ctx context.Context, listener string) (waited time.Duration, err error)
	Refund(listener string)
}

// Options configure a Server.
type Options struct {
	// ConnectionRate charges a new connection from ip to its connection
	// creation quota; a positive result means the connection is over the
	// rate and is closed after that delay, unanswered (KIP-612). Nil: none.
	ConnectionRate func(ip string) time.Duration
	// AcceptRate holds each new connection until its listener's and the
	// broker's connection creation rates allow it (KIP-612). Nil: none.
	AcceptRate AcceptRate

	MaxRequestBytes int32         // socket.request.max.bytes
	MaxReauth       time.Duration // connections.max.reauth.ms; 0: sessions never expire
	IdleTimeout     time.Duration // connections.max.idle.ms; 0 disables
	// RequestReadTimeout bounds how long a frame may take to arrive once
	// its first byte is read (kbroker.request.read.timeout.ms); ≤ 0: no
	// bound.
	RequestReadTimeout time.Duration
	Metrics            *metrics.Broker
	Logger             *slog.Logger

	// QueuedMaxRequestBytes bounds the bytes of requests read but not yet
	// handled, over all connections (queued.max.request.bytes); ≤ 0: none.
	QueuedMaxRequestBytes int64
}

// Server accepts connections on every listener and serves them.
type Server struct {
	handler         Handler
	maxRequestBytes int32
	maxReauth       time.Duration
	idleTimeout     time.Duration
	// requestReadTimeout: Options.RequestReadTimeout
	requestReadTimeout time.Duration
	queued             *requestMemory // nil: unbounded
	metrics            *metrics.Broker
	timers             map[int16]*metrics.RequestTimer
	log                *slog.Logger
	logLimits          *logLimiter // per-connection lines (loglimit.go)

	ctx    context.Context // cancelled when draining
	cancel context.CancelFunc

	connectionRate func(ip string) time.Duration
	acceptRate     AcceptRate

	mu        sync.Mutex
	listeners []net.Listener
	specs     []ListenerSpec                               // of each listener, in the same order
	security  map[string]*atomic.Pointer[ListenerSecurity] // by listener name; read by accept
	conns     map[*Conn]struct{}
	perIP     map[string]int
	perListen map[string]int // connections of each listener
	limits    *Limits        // nil: none
	// slotChanged is signalled when a connection ends, the limits change
	// or the server closes: what an accept waiting for a slot waits for.
	slotChanged *sync.Cond
	wg          sync.WaitGroup
	nextID      atomic.Uint64
}

// NewServer creates a server for handler.
func NewServer(handler Handler, opts Options) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		handler: timedHandler{handler}, logLimits: newLogLimiter(logLimitInterval),
		maxRequestBytes: opts.MaxRequestBytes, idleTimeout: opts.IdleTimeout,
		requestReadTimeout: opts.RequestReadTimeout,
		metrics:            opts.Metrics, log: opts.Logger, ctx: ctx, cancel: cancel,
		conns: map[*Conn]struct{}{}, perIP: map[string]int{}, perListen: map[string]int{}, timers: map[int16]*metrics.RequestTimer{},
		connectionRate: opts.ConnectionRate, acceptRate: opts.AcceptRate, maxReauth: opts.MaxReauth,
		queued:   newRequestMemory(opts.QueuedMaxRequestBytes),
		security: map[string]*atomic.Pointer[ListenerSecurity]{},
	}
	s.slotChanged = sync.NewCond(&s.mu)
	if s.metrics != nil {
		for key := int16(0); key < 100; key++ {
			if _, max, ok := handler.Supports(key); ok {
				s.timers[key] = s.metrics.ForAPI(key, max)
			}
		}
	}
	return s
}

// Listen binds every listener and starts accepting. It returns the bound
// addresses in order (useful with port 0).
func (s *Server) Listen(specs []ListenerSpec) ([]net.Addr, error) {
	var addrs []net.Addr
	for _, spec := range specs {
		ln, err := net.Listen("tcp", spec.Addr)
		if err != nil {
			s.Close()
			return nil, err
		}
		sec := &atomic.Pointer[ListenerSecurity]{}
		sec.Store(&ListenerSecurity{TLS: spec.TLS, SASL: spec.SASL})
		s.mu.Lock()
		s.listeners = append(s.listeners, ln)
		s.specs = append(s.specs, spec)
		s.security[spec.Name] = sec
		s.mu.Unlock()
		addrs = append(addrs, ln.Addr())
	}
	return addrs, nil
}

// Serve starts accepting on the bound listeners. It is separate from
// Listen so the caller can learn the bound ports (listeners on port 0) and
// finish its own setup before the first client is served.
func (s *Server) Serve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ln := range s.listeners {
		s.wg.Add(1)
		go s.accept(ln, s.specs[i], s.security[s.specs[i].Name])
	}
}

func (s *Server) accept(ln net.Listener, spec ListenerSpec, security *atomic.Pointer[ListenerSecurity]) {
	defer s.wg.Done()
	var gauge interface {
		Inc()
		Dec()
	}
	if s.metrics != nil {
		gauge = s.metrics.OpenConnections.WithLabelValues(spec.Name)
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "listener", spec.Name, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if tcp, ok := nc.(*net.TCPConn); ok {
			tcp.SetNoDelay(true)
		}
		if s.acceptRate != nil {
			waited, err := s.acceptRate.Admit(s.ctx, spec.Name)
			if err != nil {
				nc.Close()
				return
			}
			if waited > time.Millisecond {
				s.log.Debug("accept held by the connection creation rate", "listener", spec.Name, "waited", waited)
			}
		}
		c := s.admit(nc, spec, security)
		if c == nil {
			if s.ctx.Err() != nil {
				return
			}
			continue
		}
		if gauge != nil {
			gauge.Inc()
		}
		go func() {
			defer s.wg.Done()
			c.serve(s.ctx)
			s.release(c)
			if gauge != nil {
				gauge.Dec()
			}
		}()
	}
}

// admit registers nc as a connection of spec's listener once it has a
// connection slot and its IP is within its limits, in Kafka's order
// (ConnectionQuotas.inc): wait for a slot, then charge the IP's connection
// creation rate, then count the IP's connections. It returns nil, nc
// closed, when the connection is refused or the server closes meanwhile.
func (s *Server) admit(nc net.Conn, spec ListenerSpec, security *atomic.Pointer[ListenerSecurity]) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.waitForSlot(spec.Name) {
		nc.Close()
		return nil
	}
	// The security of this very moment: a dynamic change applies to the
	// connections accepted after it, the others keep theirs.
	sec := security.Load()
	c := &Conn{
		ID: s.nextID.Add(1), Listener: spec.Name, Protocol: spec.Protocol, Remote: nc.RemoteAddr(),
		Principal: "User:ANONYMOUS", nc: wrapTLS(nc, sec.TLS), srv: s,
	}
	c.sec.mechanisms = sec.SASL
	c.log = s.log.With("conn", c.ID, "remote", c.Remote.String(), "listener", spec.Name)
	ip := c.RemoteIP()
	if s.connectionRate != nil {
		if delay := s.connectionRate(ip); delay > 0 {
			if s.acceptRate != nil {
				s.acceptRate.Refund(spec.Name)
			}
			c.log.Debug("connection over its creation rate; closing it after the throttle", "delay", delay)
			time.AfterFunc(delay, func() { nc.Close() })
			return nil
		}
	}
	if limit := s.maxPerIP(ip); s.perIP[ip] >= limit {
		c.logLimited(slog.LevelInfo, "refusing connection", "reason", "max.connections.per.ip reached", "ip", ip, "limit", limit)
		nc.Close()
		return nil
	}
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.perListen[spec.Name]++
	s.wg.Add(1)
	return c
}

// release forgets a connection that has ended and frees its slot.
func (s *Server) release(c *Conn) {
	ip := c.RemoteIP()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.perIP[ip]--; s.perIP[ip] == 0 {
		delete(s.perIP, ip)
	}
	s.perListen[c.Listener]--
	s.slotChanged.Broadcast()
}

// waitForSlot waits until listener may hold one more connection, or the
// server closes (false). The caller holds s.mu, which is released while
// waiting.
func (s *Server) waitForSlot(listener string) bool {
	var start time.Time
	for s.ctx.Err() == nil {
		if s.slotAvailable(listener) {
			if !start.IsZero() {
				s.log.Debug("accept held for a connection slot", "listener", listener, "waited", time.Since(start))
			}
			return true
		}
		if start.IsZero() {
			start = time.Now()
		}
		s.slotChanged.Wait()
	}
	return false
}

// slotAvailable is Kafka's connectionSlotAvailable: below the listener's
// own limit, and below max.connections unless the listener is the
// protected inter-broker one. The caller holds s.mu.
func (s *Server) slotAvailable(listener string) bool {
	l := s.limits
	if l == nil {
		return true
	}
	if n, ok := l.MaxPerListener[listener]; ok && s.perListen[listener] >= n {
		return false
	}
	return listener == l.InterBroker || len(s.conns) < l.MaxConnections
}

// maxPerIP is how many connections ip may hold. The caller holds s.mu.
func (s *Server) maxPerIP(ip string) int {
	if s.limits == nil {
		return math.MaxInt
	}
	if n, ok := s.limits.PerIPOverrides[ip]; ok {
		return n
	}
	return s.limits.MaxPerIP
}

// SetLimits installs new connection limits for the connections accepted
// from now on; accepts waiting for a slot re-check them, so a raised limit
// lets them in at once. Open connections are never closed by a lower one.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &l
	s.slotChanged.Broadcast()
}

// SetListenerSecurity replaces the TLS config and SASL mechanisms of the
// named listener for the connections accepted from now on; connections
// already open keep the ones they started with. The caller keeps the
// listener's protocol (TLS set exactly on SSL listeners, SASL on SASL ones).
func (s *Server) SetListenerSecurity(name string, sec ListenerSecurity) error {
	s.mu.Lock()
	p := s.security[name]
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no listener %s", name)
	}
	if cur := p.Load(); (cur.TLS == nil) != (sec.TLS == nil) || (cur.SASL == nil) != (sec.SASL == nil) {
		return fmt.Errorf("listener %s cannot change its security protocol", name)
	}
	p.Store(&sec)
	return nil
}

// observe records a request answered d after it was read: its count, its
// total time, and how that time split between waiting to be handled, the
// handler working and the handler parked (timedHandler).
func (s *Server) observe(req *Request, d time.Duration) {
	t := s.timers[req.Key]
	if t == nil {
		return
	}
	times := metrics.RequestTimes{Total: d}
	if !req.handleStart.IsZero() {
		read := time.Now().Add(-d)
		took := req.handleEnd.Sub(req.handleStart)
		times.Split = true
		times.Queue = max(req.handleStart.Sub(read), 0)
		times.Parked = min(req.Parked, took)
		times.Handler = took - times.Parked
	}
	t.Observe(req.Version, times)
}

// timedHandler notes when the handler starts and ends on each request, for
// the split of its time in observe.
type timedHandler struct{ Handler }

func (h timedHandler) Handle(ctx context.Context, c *Conn, req *Request) (kmsg.Response, error) {
	req.handleStart = time.Now()
	defer func() { req.handleEnd = time.Now() }()
	return h.Handler.Handle(ctx, c, req)
}

// countAuthentication counts a SASL exchange's outcome, for
// kbroker_authentications_total.
func (s *Server) countAuthentication(listener, mechanism string, ok bool) {
	if s.metrics != nil {
		s.metrics.Authenticated(listener, mechanism, ok)
	}
}

// Close stops accepting, lets every connection finish the requests it has
// already read (long polls return early), then closes them and waits.
func (s *Server) Close() error {
	s.mu.Lock()
	s.cancel()
	s.slotChanged.Broadcast() // accepts waiting for a slot give up
	for _, ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		// Wake a reader blocked on the socket; it stops reading, and the
		// handler loop drains what was already queued.
		c.nc.SetReadDeadline(time.Now())
		// Wake a writer blocked on a client that stopped reading.
		c.nc.SetWriteDeadline(time.Now().Add(drainWriteTimeout))
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// requestMemory is Kafka's memory pool for requests (queued.max.request.bytes):
// a broker-wide budget of bytes of requests read but not yet handled. A
// connection reserves its next frame's size before reading the frame, and
// waits, not reading, while the budget is spent; the bytes come back once
// the request is handled. As in Kafka's non-strict pool, a frame is let in
// whenever any budget is left, so one larger than the whole budget is still
// served, alone, and the budget is overrun by at most one frame.
type requestMemory struct {
	mu     sync.Mutex
	free   int64
	waited bool          // someone waits on freed
	freed  chan struct{} // closed (and replaced) when bytes come back
}

func newRequestMemory(limit int64) *requestMemory {
	if limit <= 0 {
		return nil
	}
	return &requestMemory{free: limit, freed: make(chan struct{})}
}

// reserve takes n bytes, waiting while none are left, until ctx ends.
func (m *requestMemory) reserve(ctx context.Context, n int) error {
	if m == nil {
		return nil
	}
	for {
		m.mu.Lock()
		if m.free > 0 {
			m.free -= int64(n)
			m.mu.Unlock()
			return nil
		}
		m.waited = true
		freed := m.freed
		m.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back the bytes req holds, once; only the goroutine that
// owns req calls it.
func (m *requestMemory) release(req *Request) {
	if req != nil {
		m.give(req.queued)
		req.queued = 0
	}
}

// take charges n bytes without waiting, even past the budget: for the
// small requests every connection may have in (Conn.reserve).
func (m *requestMemory) take(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.free -= int64(n)
	m.mu.Unlock()
}

// give returns n bytes and wakes the connections waiting for them.
func (m *requestMemory) give(n int) {
	if m == nil || n == 0 {
		return
	}
	m.mu.Lock()
	m.free += int64(n)
	if m.waited {
		close(m.freed)
		m.freed, m.waited = make(chan struct{}), false
	}
	m.mu.Unlock()
}
