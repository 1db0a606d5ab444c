package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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
}

// Options configure a Server.
type Options struct {
	MaxRequestBytes int32         // socket.request.max.bytes
	IdleTimeout     time.Duration // connections.max.idle.ms; 0 disables
	Metrics         *metrics.Broker
	Logger          *slog.Logger
}

// Server accepts connections on every listener and serves them.
type Server struct {
	handler         Handler
	maxRequestBytes int32
	idleTimeout     time.Duration
	metrics         *metrics.Broker
	timers          map[int16]*metrics.RequestTimer
	log             *slog.Logger

	ctx    context.Context // cancelled when draining
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*Conn]struct{}
	wg        sync.WaitGroup
	nextID    atomic.Uint64
}

// NewServer creates a server for handler.
func NewServer(handler Handler, opts Options) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		handler: handler, maxRequestBytes: opts.MaxRequestBytes, idleTimeout: opts.IdleTimeout,
		metrics: opts.Metrics, log: opts.Logger, ctx: ctx, cancel: cancel,
		conns: map[*Conn]struct{}{}, timers: map[int16]*metrics.RequestTimer{},
	}
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
		s.mu.Lock()
		s.listeners = append(s.listeners, ln)
		s.mu.Unlock()
		addrs = append(addrs, ln.Addr())
		s.wg.Add(1)
		go s.accept(ln, spec)
	}
	return addrs, nil
}

func (s *Server) accept(ln net.Listener, spec ListenerSpec) {
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
		c := &Conn{
			ID: s.nextID.Add(1), Listener: spec.Name, Protocol: spec.Protocol, Remote: nc.RemoteAddr(),
			Principal: "User:ANONYMOUS", nc: nc, srv: s,
		}
		c.log = s.log.With("conn", c.ID, "remote", c.Remote.String(), "listener", spec.Name)
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		if gauge != nil {
			gauge.Inc()
		}
		go func() {
			defer s.wg.Done()
			c.serve(s.ctx)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			if gauge != nil {
				gauge.Dec()
			}
		}()
	}
}

func (s *Server) observe(req *Request, d time.Duration) {
	if t := s.timers[req.Key]; t != nil {
		t.Observe(req.Version, d)
	}
}

// Close stops accepting, lets every connection finish the requests it has
// already read (long polls return early), then closes them and waits.
func (s *Server) Close() error {
	s.mu.Lock()
	s.cancel()
	for _, ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		// Wake a reader blocked on the socket; it stops reading, and the
		// handler loop drains what was already queued.
		c.nc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
