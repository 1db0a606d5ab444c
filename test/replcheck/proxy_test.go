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
// relay, and the relay forwards each connection to the current run. While
// the broker is down the relay does not listen, so connections are
// refused, and a killed run's connections are closed, as a dead host's
// would be; a stopped (SIGSTOP) run's stay open and silent, as a paused
// host's do.
type relay struct {
	t       *testing.T
	address string

	mu     sync.Mutex
	ln     net.Listener // nil while the broker is down
	target string
	conns  map[net.Conn]struct{}
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // listening starts with the first point
	r := &relay{t: t, address: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { r.point("") })
	return r
}

func (r *relay) addr() string { return r.address }

// point sends new connections to addr (closing the listener when addr is
// "") and closes the open ones, which went to a run that is gone (or
// about to be). It is called from the test's goroutine.
func (r *relay) point(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = addr
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
	switch {
	case addr == "" && r.ln != nil:
		r.ln.Close()
		r.ln = nil
	case addr != "" && r.ln == nil:
		// The port was ours a moment ago; another process taking it in
		// between is unlikely, and fails the run loudly if it happens.
		for attempt := 0; ; attempt++ {
			ln, err := net.Listen("tcp", r.address)
			if err == nil {
				r.ln = ln
				go r.serve(ln)
				break
			}
			if attempt == 50 {
				r.t.Fatalf("relay: listening again on %s: %v", r.address, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (r *relay) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
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
