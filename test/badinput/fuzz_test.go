package badinput

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fuzzBroker.stop()
	os.Exit(code)
}

// fuzzBroker is one broker per test process for FuzzBrokerFrame: started on
// first use, closed by TestMain. (Each fuzz worker is its own process.)
var fuzzBroker fuzzServer

type fuzzServer struct {
	once sync.Once
	b    *broker.Broker
	dir  string
	apis []apiRange
	err  error
}

// apiRange is one API the broker serves, with its versions.
type apiRange struct {
	key      int16
	min, max int16
}

// fuzzTopic exists on the fuzz broker, so fuzzed produces and fetches can
// reach the storage paths, not only "unknown topic".
const fuzzTopic = "fuzz"

// fuzzTarget returns the fuzz broker's address and the APIs to fuzz.
func fuzzTarget(t testing.TB) (string, []apiRange) {
	t.Helper()
	f := &fuzzBroker
	f.once.Do(func() { f.err = f.start() })
	if f.err != nil {
		t.Fatalf("starting the fuzz broker: %v", f.err)
	}
	return f.b.Addr(), f.apis
}

func (f *fuzzServer) start() error {
	dir, err := os.MkdirTemp("", "kbroker-fuzz-")
	if err != nil {
		return err
	}
	f.dir = dir
	f.b, err = broker.New(config.Properties{
		"listeners":                "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                 dir,
		"socket.request.max.bytes": "1048576",
	})
	if err == nil {
		err = f.b.Start()
	}
	if err != nil {
		f.b = nil
		return err
	}
	return f.discover()
}

// discover asks the broker what it serves (so the fuzzer follows the
// handlers as they are added) and creates the fuzz topic.
func (f *fuzzServer) discover() error {
	c, err := plainDial(f.b.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	versions := kmsg.NewPtrApiVersionsRequest()
	resp, err := c.roundTrip(versions)
	if err != nil {
		return err
	}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		// Configuration changes are left out: a fuzzed AlterConfigs could
		// legitimately set max.connections to 0 and hold every later connection.
		if strings.Contains(kmsg.NameForKey(k.ApiKey), "Alter") {
			continue
		}
		f.apis = append(f.apis, apiRange{key: k.ApiKey, min: k.MinVersion, max: k.MaxVersion})
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version, create.TimeoutMillis = 7, 5000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fuzzTopic, 2, 1
	create.Topics = append(create.Topics, ct)
	if _, err := c.roundTrip(create); err != nil {
		return err
	}
	return nil
}

func (f *fuzzServer) stop() {
	if f.b != nil {
		f.b.Close()
	}
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
}

// fuzzInput encodes req as a FuzzBrokerFrame input: which API (index into
// apis), which version (offset from the minimum), then the body.
func fuzzInput(apis []apiRange, req kmsg.Request) ([]byte, bool) {
	for i, a := range apis {
		if a.key == req.Key() && req.GetVersion() >= a.min && req.GetVersion() <= a.max {
			return append([]byte{byte(i), byte(req.GetVersion() - a.min)}, req.AppendTo(nil)...), true
		}
	}
	return nil, false
}

// FuzzBrokerFrame sends arbitrary request bodies through the real dispatch
// path: the first two bytes pick an API the broker serves and a version in
// its range, the rest is the body, framed with a valid header on a fresh
// connection. The broker must answer with a response that decodes, or close
// the connection; it must never crash (it runs in this process), and a new
// connection must still get an ApiVersions answer.
func FuzzBrokerFrame(f *testing.F) {
	addr, apis := fuzzTarget(f)
	for _, req := range fuzzSeeds() {
		if in, ok := fuzzInput(apis, req); ok {
			f.Add(in)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0xff, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		api := apis[int(in[0])%len(apis)]
		version := api.min + int16(int(in[1])%int(api.max-api.min+1))
		body := in[2:]
		if len(body) > maxRequestBytes-64 {
			body = body[:maxRequestBytes-64]
		}
		req := kmsg.RequestForKey(api.key)
		req.SetVersion(version)
		const corr = 77

		c, err := plainDial(addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		if err := c.write(testkit.Sized(append(testkit.Header(api.key, version, corr, req.IsFlexible()), body...))); err != nil && !testkit.ClosedByPeer(err) {
			t.Fatalf("write: %v", err)
		}

		// Fetch may long-poll and Produce with acks=0 answers nothing, so
		// silence from them is fine; anything else must answer or close.
		wait := 5 * time.Second
		silentOK := api.key == int16(kmsg.Fetch) || api.key == int16(kmsg.Produce)
		if silentOK {
			wait = 100 * time.Millisecond
		}
		got, respBody, err := c.readFrameWithin(wait)
		switch {
		case err == nil:
			if got != corr {
				t.Fatalf("%s v%d: response correlation id %d, want %d", kmsg.NameForKey(api.key), version, got, corr)
			}
			if _, err := testkit.Decode(req, respBody); err != nil {
				t.Fatalf("%s v%d: the broker's response does not decode: %v", kmsg.NameForKey(api.key), version, err)
			}
		case testkit.ClosedByPeer(err):
		case errors.Is(err, os.ErrDeadlineExceeded) && silentOK:
		default:
			t.Fatalf("%s v%d: neither answered nor closed within %v: %v", kmsg.NameForKey(api.key), version, wait, err)
		}

		if err := healthy(addr); err != nil {
			t.Fatalf("after %s v%d with a %d-byte body: %v", kmsg.NameForKey(api.key), version, len(body), err)
		}
	})
}

// healthy checks that a new connection gets an ApiVersions answer.
func healthy(addr string) error {
	c, err := plainDial(addr)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	defer c.Close()
	resp, err := c.roundTrip(kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return fmt.Errorf("health check: ApiVersions error %d", code)
	}
	return nil
}

// fuzzSeeds are valid requests of the APIs a client uses most, aimed at the
// fuzz topic, for the fuzzer to start from.
func fuzzSeeds() []kmsg.Request {
	var out []kmsg.Request
	for _, v := range []int16{0, 3} {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = v, "badinput", "1"
		out = append(out, r)
	}
	for _, v := range []int16{1, 9, 12} {
		out = append(out, metadataRequest(v, true, fuzzTopic, "other"))
	}
	for _, v := range []int16{3, 9, 11} {
		out = append(out, produceRequest(v, 1, fuzzTopic, 0, batch("seed-a", "seed-b")))
	}
	out = append(out, produceRequest(9, 0, fuzzTopic, 1, batch("acks-zero")))
	for _, v := range []int16{4, 12} {
		out = append(out, fetchRequest(v, fuzzTopic, 0, 0))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = fuzzTopic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	out = append(out, lo)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis, ct.ValidateOnly = 7, 1000, true
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = "fuzz-new", 3, 1
	ct.Topics = append(ct.Topics, t)
	out = append(out, ct)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	out = append(out, ip)
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.Version = 1
	out = append(out, dc)
	return out
}

// plainConn is a raw client for use outside a test's goroutine: it
// returns errors instead of failing a test.
type plainConn struct {
	net.Conn
	corr int32
}

func plainDial(addr string) (*plainConn, error) {
	nc, err := net.DialTimeout("tcp", addr, testkit.IOTimeout)
	if err != nil {
		return nil, err
	}
	return &plainConn{Conn: nc}, nil
}

func (c *plainConn) write(b []byte) error {
	c.SetWriteDeadline(time.Now().Add(testkit.IOTimeout))
	_, err := c.Write(b)
	return err
}

func (c *plainConn) readFrameWithin(d time.Duration) (int32, []byte, error) {
	return testkit.ReadFrame(c.Conn, d)
}

func (c *plainConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	if err := c.write(testkit.Frame(req, c.corr)); err != nil {
		return nil, err
	}
	got, body, err := testkit.ReadFrame(c.Conn, testkit.IOTimeout)
	if err != nil {
		return nil, err
	}
	if got != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	return testkit.Decode(req, body)
}
