package testkit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IOTimeout bounds every read and write of a RawConn, so a broker that
// neither answers nor closes fails the test instead of hanging it.
const IOTimeout = 5 * time.Second

// ClientID is the client id of the requests a RawConn frames.
const ClientID = "testkit"

// Header encodes a request header: v1 (key, version, correlation id,
// nullable client id), plus v2's empty tagged-field section when flexible.
func Header(key, version int16, correlationID int32, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(len(ClientID)))
	b = append(b, ClientID...)
	if flexible {
		b = append(b, 0)
	}
	return b
}

// Sized prefixes a frame with its int32 size.
func Sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// Frame is req as it goes on the wire: size, header, body.
func Frame(req kmsg.Request, correlationID int32) []byte {
	f := Header(req.Key(), req.GetVersion(), correlationID, req.IsFlexible())
	return Sized(req.AppendTo(f))
}

// RawConn is a Kafka client that writes whatever bytes it is given.
type RawConn struct {
	t    testing.TB
	Conn net.Conn
	corr int32
}

// Dial connects a RawConn to addr, closed when the test ends.
func Dial(t testing.TB, addr string) *RawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, IOTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &RawConn{t: t, Conn: nc}
}

// NewRawConn speaks over nc (a TLS connection, say).
func NewRawConn(t testing.TB, nc net.Conn) *RawConn { return &RawConn{t: t, Conn: nc} }

// Write writes b as is.
func (c *RawConn) Write(b []byte) {
	c.t.Helper()
	c.Conn.SetWriteDeadline(time.Now().Add(IOTimeout))
	if _, err := c.Conn.Write(b); err != nil {
		c.t.Fatalf("write %d bytes: %v", len(b), err)
	}
}

// WriteFrame writes b with its size prefix (a raw SASL token, say).
func (c *RawConn) WriteFrame(b []byte) {
	c.t.Helper()
	c.Write(Sized(b))
}

// Send frames and writes req with the next correlation id, and returns it.
func (c *RawConn) Send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	c.Write(Frame(req, c.corr))
	return c.corr
}

// ReadRawFrame reads one size-prefixed frame whole.
func (c *RawConn) ReadRawFrame() ([]byte, error) { return ReadRawFrame(c.Conn, IOTimeout) }

// ReadFrame reads one response frame: its correlation id and the rest.
func (c *RawConn) ReadFrame() (int32, []byte, error) { return ReadFrame(c.Conn, IOTimeout) }

// ReadRawFrame reads one size-prefixed frame from nc within d.
func ReadRawFrame(nc net.Conn, d time.Duration) ([]byte, error) {
	nc.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("frame size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(nc, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadFrame reads one response frame from nc within d.
func ReadFrame(nc net.Conn, d time.Duration) (int32, []byte, error) {
	buf, err := ReadRawFrame(nc, d)
	if err != nil {
		return 0, nil, err
	}
	if len(buf) < 4 {
		return 0, nil, fmt.Errorf("response frame size %d", len(buf))
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// Read reads the response to req, sent with correlation id corr.
func (c *RawConn) Read(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	got, body, err := c.ReadFrame()
	if err != nil {
		c.t.Fatalf("reading the response to %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if got != corr {
		c.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return DecodeResponse(c.t, req, body)
}

// RoundTrip sends req and returns its response.
func (c *RawConn) RoundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.Read(req, c.Send(req))
}

// DecodeResponse decodes body (after the correlation id) as the response
// to req, failing the test if it does not decode.
func DecodeResponse(t testing.TB, req kmsg.Request, body []byte) kmsg.Response {
	t.Helper()
	resp, err := Decode(req, body)
	if err != nil {
		t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// Decode decodes body (after the correlation id) as the response to req,
// skipping the v1 response header's tags when flexible (never for
// ApiVersions, whose response header is always v0).
func Decode(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("flexible response header: want an empty tag section, got % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// ExpectClosed fails unless the broker closes the connection within d
// without sending anything first.
func (c *RawConn) ExpectClosed(d time.Duration) {
	c.t.Helper()
	c.Conn.SetReadDeadline(time.Now().Add(d))
	var b [512]byte
	n, err := c.Conn.Read(b[:])
	switch {
	case n > 0:
		c.t.Fatalf("expected the broker to close the connection; it sent % x", b[:min(n, 32)])
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.t.Fatalf("the broker did not close the connection within %v", d)
	case !ClosedByPeer(err):
		c.t.Fatalf("expected the connection closed, got %v", err)
	}
}

// ExpectOpen fails if the broker closes the connection or sends anything
// within d.
func (c *RawConn) ExpectOpen(d time.Duration) {
	c.t.Helper()
	c.Conn.SetReadDeadline(time.Now().Add(d))
	var b [512]byte
	n, err := c.Conn.Read(b[:])
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("expected the connection open and quiet for %v; read %d bytes, err %v", d, n, err)
	}
}
