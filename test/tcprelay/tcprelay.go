// Package tcprelay is a real TCP relay for tests: one stable address whose
// connections are forwarded to a target that can change. A test that
// restarts a broker on a fresh port (testbin starts every run of the binary
// on new ports) advertises the relay instead, so clients, other brokers'
// fetchers and their transactions keep one address across restarts, as
// against a real broker restarted on its own port.
//
// Pointing the relay elsewhere closes the connections it carries, as a dead
// host's would be closed. Hold stalls every byte in both directions until
// Release, as a network that stops delivering does, while the connections
// stay open.
package tcprelay

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Relay forwards each connection it accepts to its current target.
type Relay struct {
	t       testing.TB
	address string
	// refuse: while no target is set the relay does not listen, so
	// connections are refused (RefuseWhileDown).
	refuse bool

	mu     sync.Mutex
	ln     net.Listener // nil while refusing, and after the test
	target string       // "" while the broker is down
	conns  map[net.Conn]struct{}
	// held, while Hold is in force, is closed by Release: the pipes wait
	// on it before writing what they read.
	held chan struct{}
}

// Option changes how a Relay behaves.
type Option func(*Relay)

// RefuseWhileDown makes the relay stop listening while it has no target,
// so connections are refused, as by a host whose broker process is gone.
// Without it the relay accepts them and closes them at once.
func RefuseWhileDown() Option { return func(r *Relay) { r.refuse = true } }

// New starts a relay on a free 127.0.0.1 port, without a target; it stops
// when the test ends.
func New(t testing.TB, opts ...Option) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{t: t, address: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	for _, o := range opts {
		o(r)
	}
	if r.refuse {
		ln.Close() // listening starts with the first target
	} else {
		r.ln = ln
		go r.serve(ln)
	}
	t.Cleanup(r.close)
	return r
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.address }

// Point sends new connections to target ("" while the broker is down) and
// closes the open ones: they went to a run that is gone, or about to be.
func (r *Relay) Point(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = target
	r.closeConns()
	if !r.refuse {
		return
	}
	switch {
	case target == "" && r.ln != nil:
		r.ln.Close()
		r.ln = nil
	case target != "" && r.ln == nil:
		r.listenAgain()
	}
}

// listenAgain takes the relay's port back. It was ours a moment ago;
// another process taking it in between is unlikely, and fails the test
// loudly if it happens.
func (r *Relay) listenAgain() {
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", r.address)
		if err == nil {
			r.ln = ln
			go r.serve(ln)
			return
		}
		if attempt == 50 {
			r.t.Fatalf("tcprelay: listening again on %s: %v", r.address, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Hold stops every byte, both ways, on the open connections and on those
// accepted from now on, until Release. Nothing is lost: what was held is
// delivered after Release.
func (r *Relay) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = make(chan struct{})
	}
}

// Release lets the bytes held since Hold flow again.
func (r *Relay) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		close(r.held)
		r.held = nil
	}
}

func (r *Relay) close() {
	r.Release()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = ""
	r.closeConns()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	r.refuse = true // no listening again
}

// closeConns closes every connection carried; r.mu is held.
func (r *Relay) closeConns() {
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

func (r *Relay) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go r.forward(c)
	}
}

func (r *Relay) forward(client net.Conn) {
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
	if r.target != target { // the target changed while we dialled
		r.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	r.conns[client], r.conns[server] = struct{}{}, struct{}{}
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { r.pipe(server, client); done <- struct{}{} }()
	go func() { r.pipe(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	r.mu.Lock()
	delete(r.conns, client)
	delete(r.conns, server)
	r.mu.Unlock()
}

// pipe copies src to dst until either fails, waiting before each write
// while the relay is held.
func (r *Relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.waitWhileHeld()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *Relay) waitWhileHeld() {
	r.mu.Lock()
	held := r.held
	r.mu.Unlock()
	if held != nil {
		<-held
	}
}
