package replcheck

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// relay is one broker's stable address. testbin starts every run of the
// binary on fresh ports, while clients (and the other brokers' fetchers)
// keep the addresses Metadata advertised; so each broker advertises its
// relay, and the relay forwards each connection to the current run. A
// killed run's connections are closed, as a dead host's would reset; a
// stopped (SIGSTOP) run's stay open and silent, as a paused host's do.
type relay struct {
	ln net.Listener

	mu     sync.Mutex
	target string // "" while the broker is down: connections are refused
	conns  map[net.Conn]struct{}
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, conns: map[net.Conn]struct{}{}}
	go r.serve()
	t.Cleanup(func() {
		ln.Close()
		r.point("")
	})
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

// point sends new connections to addr and closes the open ones, which
// went to a run that is gone (or about to be).
func (r *relay) point(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = addr
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.forward(c)
	}
}

func (r *relay) forward(client net.Conn) {
	r.mu.Lock()
	target := r.target
	r.mu.Unlock()
	if target == "" {
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		client.Close()
		return
	}
	r.mu.Lock()
	if r.target != target { // the run changed while we dialled
		r.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	r.conns[client], r.conns[server] = struct{}{}, struct{}{}
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	client.Close()
	server.Close()
	r.mu.Lock()
	delete(r.conns, client)
	delete(r.conns, server)
	r.mu.Unlock()
}
