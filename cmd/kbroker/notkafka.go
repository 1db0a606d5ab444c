package main

// Telling a server that does not speak Kafka from a slow broker. A client
// that gets a reply it cannot match to its request takes the connection
// for broken and retries until --timeout: against an HTTP server, a TLS
// listener reached in plaintext or any other service on the port, the
// admin commands would wait 30 s and then report a timeout. Instead every
// connection's first exchange is checked, and the command stops at once.
//
// Kafka's framing makes the check certain: every response on a connection
// answers the requests in the order they were sent, and starts with its
// size (int32) and the correlation ID (int32) of the request it answers;
// every request starts with its size, API key (int16), API version (int16)
// and correlation ID. The first reply on a connection must therefore carry
// the correlation ID of the first request written on it (the client opens
// every connection with ApiVersions, and the admin commands send nothing
// that goes unanswered, such as an acks=0 Produce). The frames are encoded
// and decoded by kmsg and kgo; this only compares header fields.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// maxResponseBytes is the largest response the admin client reads (kgo's
// default BrokerMaxReadBytes, set explicitly so the check below agrees).
const maxResponseBytes = 100 << 20

const (
	requestHeaderPrefix  = 12 // size, API key, API version, correlation ID
	responseHeaderPrefix = 8  // size, correlation ID
)

// notKafkaError says a server answered in something other than Kafka.
type notKafkaError struct {
	addr, reason string
}

func (e *notKafkaError) Error() string {
	return fmt.Sprintf("%s does not speak the Kafka protocol: %s", e.addr, e.reason)
}

// kafkaDialer dials brokers (over TLS when tlsConfig is set) and watches
// each connection until its first reply; on a reply that is not Kafka's it
// calls notKafka, once per connection.
type kafkaDialer struct {
	tlsConfig *tls.Config
	timeout   time.Duration
	notKafka  func(*notKafkaError)
}

// dial has the signature kgo.Dialer takes. The host name a certificate is
// checked against comes from addr, as kgo's own TLS dialing does.
func (d *kafkaDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: d.timeout}
	var (
		conn net.Conn
		err  error
	)
	if d.tlsConfig != nil {
		conn, err = (&tls.Dialer{NetDialer: nd, Config: d.tlsConfig}).DialContext(ctx, network, addr)
	} else {
		conn, err = nd.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	return &firstReplyConn{Conn: conn, addr: addr, notKafka: d.notKafka}, nil
}

// firstReplyConn passes every byte through unchanged, keeping copies of
// the first request's and the first reply's header prefixes.
type firstReplyConn struct {
	net.Conn
	addr     string
	notKafka func(*notKafkaError)

	mu      sync.Mutex
	request []byte
	reply   []byte
	checked bool
}

func (c *firstReplyConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if need := requestHeaderPrefix - len(c.request); need > 0 {
		c.request = append(c.request, p[:min(need, len(p))]...)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *firstReplyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked {
		return n, err
	}
	if need := responseHeaderPrefix - len(c.reply); need > 0 {
		c.reply = append(c.reply, p[:min(need, n)]...)
	}
	// Reported before the bytes or the error reach the client, so the
	// command stops on this reason rather than on the client's retry.
	if reason := c.verdict(err); reason != "" {
		c.checked = true
		c.notKafka(&notKafkaError{addr: c.addr, reason: reason})
	} else if len(c.reply) == responseHeaderPrefix {
		c.checked = true
	}
	return n, err
}

// verdict is why the reply so far cannot be Kafka's, or "" while it may be.
func (c *firstReplyConn) verdict(readErr error) string {
	r := c.reply
	if len(r) >= 4 {
		switch size := int32(binary.BigEndian.Uint32(r)); {
		case bytes.Equal(r[:4], []byte("HTTP")):
			return "it answered as an HTTP server (is the port right?)"
		case r[0] == 21 && r[1] == 3: // a TLS alert record: content type 21, version 3.x
			return "it answered with a TLS alert (it expects TLS: set security.protocol=SSL or SASL_SSL in --command-config)"
		case size < 4 || size > maxResponseBytes:
			return fmt.Sprintf("its reply starts with a size of %d bytes, which no Kafka response has", size)
		}
	}
	if len(r) == responseHeaderPrefix && len(c.request) == requestHeaderPrefix {
		if got, want := binary.BigEndian.Uint32(r[4:]), binary.BigEndian.Uint32(c.request[8:]); got != want {
			return fmt.Sprintf("its reply carries correlation ID %d, not the %d of the request it should answer", int32(got), int32(want))
		}
		return ""
	}
	if readErr != nil && (errors.Is(readErr, io.EOF) || errors.Is(readErr, syscall.ECONNRESET)) {
		if len(r) == 0 {
			return "it closed the connection without answering (unless it expects TLS, see security.protocol in --command-config, or refuses this client's connections)"
		}
		return fmt.Sprintf("it closed the connection after %d bytes, within what would be a Kafka response's header", len(r))
	}
	return ""
}
