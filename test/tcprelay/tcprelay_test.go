package tcprelay

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads, prefixed by
// name, so a test can tell which server a relayed connection reached.
func echoServer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte(name + string(buf))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes one byte and reads the echo, within wait.
func roundTrip(c net.Conn, b byte, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte{b}); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 2)
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

// A relayed connection reaches the target; pointing the relay elsewhere
// closes it and sends the next one to the new target; a held relay
// delivers nothing until released, and then everything.
func TestRelayForwardsRepointsAndHolds(t *testing.T) {
	a, b := echoServer(t, "A"), echoServer(t, "B")
	r := New(t)
	r.Point(a)
	c := dial(t, r.Addr())
	if got, err := roundTrip(c, 'x', 2*time.Second); err != nil || got != "Ax" {
		t.Fatalf("through the relay to A: %q %v", got, err)
	}

	r.Hold()
	if got, err := roundTrip(c, 'y', 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("held relay delivered %q (%v)", got, err)
	}
	r.Release()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "Ay" {
		t.Fatalf("after release: %q %v, want the held byte's echo", buf, err)
	}

	r.Point(b)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("a connection to the old target survived Point")
	}
	if got, err := roundTrip(dial(t, r.Addr()), 'z', 2*time.Second); err != nil || got != "Bz" {
		t.Fatalf("through the relay to B: %q %v", got, err)
	}
}

// Without a target a relay accepts and closes connections; with
// RefuseWhileDown it refuses them, and listens again on the same address
// once it has a target.
func TestRelayWithoutTargetClosesOrRefuses(t *testing.T) {
	target := echoServer(t, "A")
	open := New(t)
	c := dial(t, open.Addr())
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("relay without a target: read %v, want EOF", err)
	}

	refusing := New(t, RefuseWhileDown())
	if c, err := net.DialTimeout("tcp", refusing.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("a refusing relay without a target accepted a connection")
	}
	refusing.Point(target)
	if got, err := roundTrip(dial(t, refusing.Addr()), 'x', 2*time.Second); err != nil || got != "Ax" {
		t.Fatalf("refusing relay with a target: %q %v", got, err)
	}
	refusing.Point("")
	if c, err := net.DialTimeout("tcp", refusing.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("a refusing relay accepted a connection after its target went")
	}
}
