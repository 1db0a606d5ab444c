package txncheck

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is the one address the clients know across restarts of the
// broker. testbin starts every run of the binary on fresh ports, and a kgo
// client keeps the address it was seeded with and the ones Metadata
// advertised; so the broker advertises the proxy, and the proxy forwards
// each connection to whichever run is current. This keeps the clients —
// and their transactions — alive across a kill, as against a real broker
// restarted on its own port.
type proxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string // "" while the broker is down: connections are refused
	conns  map[net.Conn]struct{}
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setTarget("")
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// setTarget points new connections at addr and closes every open one: they
// went to the run that was just killed (or is about to be).
func (p *proxy) setTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(client net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.target != target { // the broker was killed while we dialled
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
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
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}
