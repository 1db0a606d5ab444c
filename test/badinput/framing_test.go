package badinput

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// maxRequestBytes is socket.request.max.bytes for these tests.
const maxRequestBytes = 1 << 20

// closePromptly is how soon the broker must close a connection it refuses.
const closePromptly = 2 * time.Second

// sizeOnly is a frame size prefix with nothing after it.
func sizeOnly(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// TestMalformedFramesCloseTheConnection sends frames Kafka cannot parse —
// sizes out of range, headers cut short, bodies that do not decode, APIs
// and versions the broker does not serve. Kafka closes the connection
// without a response for each (its InvalidReceiveException and
// InvalidRequestException paths); the broker must keep serving everyone
// else and lose nothing.
func TestMalformedFramesCloseTheConnection(t *testing.T) {
	addr := startBroker(t, config.Properties{"socket.request.max.bytes": "1048576"})
	s := seed(t, addr)

	produce := produceRequest(9, 1, s.topic, 0, batch("attack"))
	produceFrame := testkit.Frame(produce, 1)
	cases := []struct {
		name  string
		bytes []byte
	}{
		{"negative size", sizeOnly(-1)},
		{"most negative size", sizeOnly(-1 << 31)},
		{"size zero", sizeOnly(0)},
		{"size shorter than the fixed header", append(sizeOnly(6), 0, 18, 0, 3, 0, 0)},
		{"header without its client id", testkit.Sized(testkit.Header(18, 3, 1, false)[:8])},
		{"client id longer than the frame", testkit.Sized(append(testkit.Header(18, 0, 1, false)[:8], 0, 100, 'a', 'b'))},
		{"size one byte over socket.request.max.bytes", sizeOnly(maxRequestBytes + 1)},
		{"size of 2 GiB", sizeOnly(1<<31 - 1)},
		{"valid header, garbage body", testkit.Sized(append(testkit.Header(0, 3, 1, false), repeat(0x7f, 64)...))},
		{"valid header, body cut short", testkit.Sized(produceFrame[4 : len(produceFrame)-7])},
		{"flexible header without its tag section", testkit.Sized(testkit.Header(0, 9, 1, false))},
		{"unknown API key 999", testkit.Sized(testkit.Header(999, 0, 1, false))},
		{"negative API key", testkit.Sized(testkit.Header(-1, 0, 1, false))},
		{"Produce v99", testkit.Sized(append(testkit.Header(0, 99, 1, true), produce.AppendTo(nil)...))},
		{"Produce v2, below kbroker's minimum", testkit.Sized(append(testkit.Header(0, 2, 1, false), repeat(0, 16)...))},
		{"Fetch at a negative version", testkit.Sized(testkit.Header(1, -1, 1, false))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.Dial(t, addr)
			c.Write(tc.bytes)
			c.ExpectClosed(closePromptly)
			s.check(t)
		})
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestOversizedFrameIsRefusedBeforeAllocating sends only a size prefix of
// 2 GiB: the broker must close at once, on the size alone (Kafka checks
// socket.request.max.bytes before allocating the receive buffer), not wait
// for the body and not reserve memory for it.
func TestOversizedFrameIsRefusedBeforeAllocating(t *testing.T) {
	addr := startBroker(t, config.Properties{"socket.request.max.bytes": "1048576"})
	s := seed(t, addr)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := testkit.Dial(t, addr)
	start := time.Now()
	c.Write(sizeOnly(1<<31 - 1))
	c.ExpectClosed(closePromptly)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if elapsed > time.Second {
		t.Errorf("closing took %v; the size alone is enough to refuse", elapsed)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the broker allocated %d MiB for a frame it refused", grew>>20)
	}

	// Just over the limit, with the body actually sent: still refused.
	c = testkit.Dial(t, addr)
	c.Conn.SetWriteDeadline(time.Now().Add(testkit.IOTimeout))
	c.Conn.Write(append(sizeOnly(maxRequestBytes+1), make([]byte, maxRequestBytes+1)...)) // may fail once the broker closes
	c.ExpectClosed(closePromptly)

	// At the limit, a request is parsed and answered.
	c = testkit.Dial(t, addr)
	big := produceRequest(9, 1, s.topic, 0, nil)
	rest := maxRequestBytes - len(testkit.Frame(big, 1)) + 4 // what the records may take
	big.Topics[0].Partitions[0].Records = make([]byte, rest-2)
	if f := testkit.Frame(big, 1); len(f)-4 > maxRequestBytes {
		t.Fatalf("test bug: frame of %d bytes", len(f)-4)
	}
	resp := c.RoundTrip(big).(*kmsg.ProduceResponse)
	wantCode(t, "produce of zeroes at socket.request.max.bytes", resp.Topics[0].Partitions[0].ErrorCode, kerr.CorruptMessage)
	s.check(t)
}

// TestTruncatedFrameDoesNotStallOthers: a client announces 100 bytes and
// sends 10. Whether it then hangs up or just waits, other clients are
// served meanwhile, and the stalled connection is never answered.
func TestTruncatedFrameDoesNotStallOthers(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	partial := append(sizeOnly(100), testkit.Header(18, 0, 1, false)[:10]...)

	t.Run("then close", func(t *testing.T) {
		c := testkit.Dial(t, addr)
		c.Write(partial)
		c.Conn.Close()
		s.check(t)
	})
	t.Run("then wait", func(t *testing.T) {
		stalled := testkit.Dial(t, addr)
		stalled.Write(partial)
		s.check(t)
		other := testkit.Dial(t, addr)
		resp := other.RoundTrip(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "badinput", ClientSoftwareVersion: "1"}).(*kmsg.ApiVersionsResponse)
		wantCode(t, "ApiVersions beside a stalled frame", resp.ErrorCode, &kerr.Error{Code: 0})
		stalled.ExpectOpen(200 * time.Millisecond)
	})
}

// TestApiVersionsTooNewAnswersAtV0 follows KIP-511: an ApiVersions request
// newer than the broker's gets a v0-encoded response with
// UNSUPPORTED_VERSION and the full key list, on a connection that stays
// open so the client can retry at a version both sides know.
func TestApiVersionsTooNewAnswersAtV0(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	body := (&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "badinput", ClientSoftwareVersion: "99"}).AppendTo(nil)
	c.Write(testkit.Sized(append(testkit.Header(int16(kmsg.ApiVersions), 99, 7, true), body...)))
	v0 := &kmsg.ApiVersionsRequest{Version: 0}
	resp := c.Read(v0, 7).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions v99", resp.ErrorCode, kerr.UnsupportedVersion)
	keys := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = k
	}
	for _, key := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.Metadata, kmsg.ApiVersions} {
		k, ok := keys[int16(key)]
		if !ok || k.MinVersion > k.MaxVersion {
			t.Errorf("v0 answer lists %s as %+v (present %v)", key.Name(), k, ok)
		}
	}
	if k := keys[int16(kmsg.ApiVersions)]; k.MinVersion != 0 {
		t.Errorf("ApiVersions min version %d, want 0 so any client can ask", k.MinVersion)
	}

	// The retry at the broker's maximum works on the same connection.
	retry := kmsg.NewPtrApiVersionsRequest()
	retry.Version = keys[int16(kmsg.ApiVersions)].MaxVersion
	retry.ClientSoftwareName, retry.ClientSoftwareVersion = "badinput", "1"
	again := c.RoundTrip(retry).(*kmsg.ApiVersionsResponse)
	if again.ErrorCode != 0 || len(again.ApiKeys) != len(resp.ApiKeys) {
		t.Errorf("retry at v%d: error %d, %d keys (v0 answer had %d)", retry.Version, again.ErrorCode, len(again.ApiKeys), len(resp.ApiKeys))
	}
	s.check(t)
}

// TestPipelinedRequestsAnsweredInOrder writes many requests of different
// APIs in one go before reading anything: Kafka answers one connection's
// requests in the order they were sent, so correlation ids come back
// ascending and each body decodes as its own API.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	const rounds = 25
	var reqs []kmsg.Request
	for i := 0; i < rounds; i++ {
		reqs = append(reqs,
			&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "badinput", ClientSoftwareVersion: "1"},
			metadataRequest(12, false, s.topic),
			produceRequest(9, 1, s.topic, 0, batch("pipelined")),
			fetchRequest(12, s.topic, 0, int64(len(s.values)+i)),
		)
	}
	var out []byte
	for i, req := range reqs {
		out = append(out, testkit.Frame(req, int32(1000+i))...)
	}
	c.Write(out)

	for i, req := range reqs {
		resp := c.Read(req, int32(1000+i))
		switch r := resp.(type) {
		case *kmsg.ProduceResponse:
			p := r.Topics[0].Partitions[0]
			if want := int64(len(s.values) + i/4); p.ErrorCode != 0 || p.BaseOffset != want {
				t.Fatalf("pipelined produce %d: error %d, base offset %d, want offset %d", i/4, p.ErrorCode, p.BaseOffset, want)
			}
		case *kmsg.FetchResponse:
			p := r.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				t.Fatalf("pipelined fetch %d: error %d, %d bytes of records", i/4, p.ErrorCode, len(p.RecordBatches))
			}
		}
	}
	for range rounds {
		s.values = append(s.values, "pipelined")
	}
	s.check(t)
}

// TestAnswersBeforeABadFrameStillArrive pipelines two good requests and
// then a frame that does not parse, in one write. The broker reads one
// request at a time, as Kafka does, so the good ones are answered, in
// order, before it reads the bad frame and closes the connection.
func TestAnswersBeforeABadFrameStillArrive(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	good := []kmsg.Request{
		metadataRequest(12, false, s.topic),
		produceRequest(9, 1, s.topic, 0, batch("before the bad frame")),
	}
	var out []byte
	for i, req := range good {
		out = append(out, testkit.Frame(req, int32(7+i))...)
	}
	out = append(out, testkit.Sized(testkit.Header(999, 0, 9, false))...) // unknown API key
	c.Write(out)

	md := c.Read(good[0], 7).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata answer before the bad frame: %+v", md.Topics)
	}
	p := c.Read(good[1], 8).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce answer before the bad frame: error %d", p.ErrorCode)
	}
	c.ExpectClosed(closePromptly)
	s.values = append(s.values, "before the bad frame")
	s.check(t)
}

// stuffUnread pipelines large fetches of s's topic on a new connection and
// never reads the answers, until the broker stops reading (back-pressure)
// or limit requests are out. It returns the connection and how many frames
// went out whole.
func stuffUnread(t *testing.T, addr string, s *survivor, limit int) (*testkit.RawConn, int) {
	t.Helper()
	c := testkit.Dial(t, addr)
	fetch := fetchRequest(12, s.topic, 0, 0)
	// A long rack id (ignored by a one-broker cluster) makes each request
	// big enough that the socket buffers fill after a few hundred.
	fetch.Rack = string(repeat('r', 32<<10))
	sent := 0
	for ; sent < limit; sent++ {
		c.Conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Conn.Write(testkit.Frame(fetch, int32(sent))); err != nil {
			break // the broker stopped reading: back-pressure reached us
		}
	}
	return c, sent
}

// fillTopic adds half a MiB to s's topic, so every fetch of it from offset 0
// answers that much.
func fillTopic(t *testing.T, s *survivor) {
	t.Helper()
	big := make([]string, 64)
	for i := range big {
		big[i] = string(repeat('x', 8<<10))
	}
	s.produce(t, newClient(t, s.addr), big...)
}

// TestClientThatNeverReads pipelines large fetches and never reads the
// answers. The broker may stop reading from it (its socket buffers are
// full), but it must keep serving other clients, not buffer without bound,
// and give up on the stuck connection once connections.max.idle.ms passes
// with no progress, as Kafka's idle expiry does (a channel blocked on send
// has no activity, so it expires like any idle one).
func TestClientThatNeverReads(t *testing.T) {
	addr := startBroker(t, config.Properties{"connections.max.idle.ms": "1000"})
	s := seed(t, addr)
	fillTopic(t, s)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const limit = 2000 // 1 GiB of answers: far more than socket buffers hold
	c, sent := stuffUnread(t, addr, s, limit)
	if sent == limit {
		t.Fatalf("wrote all %d fetches without back-pressure; the test needs a stuck connection", sent)
	}

	s.check(t)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB while a client did not read its answers", grew>>20)
	}

	// Stay stuck for longer than connections.max.idle.ms, then read: the
	// broker should have hung up, so only what already sat in the socket
	// buffers arrives, not an answer to every request.
	time.Sleep(2500 * time.Millisecond)
	answered := 0
	for {
		_, _, err := c.ReadFrame()
		if err == nil {
			answered++
			continue
		}
		if !testkit.ClosedByPeer(err) {
			t.Fatalf("stuck connection: after %d answers: %v (not closed)", answered, err)
		}
		break
	}
	if answered >= sent {
		t.Errorf("the broker waited for the stuck client: it answered all %d requests once the client read again, "+
			"instead of closing the connection after connections.max.idle.ms=1000 without progress", sent)
	}
}

// TestBrokerCloseWithAStuckClient: shutting down must not wait on a client
// that stopped reading; Kafka's shutdown closes every connection.
func TestBrokerCloseWithAStuckClient(t *testing.T) {
	b := brokertest.Start(t, nil)
	s := seed(t, b.Addr())
	fillTopic(t, s)
	c, sent := stuffUnread(t, b.Addr(), s, 2000)
	if sent == 2000 {
		t.Fatalf("wrote all fetches without back-pressure; the test needs a stuck connection")
	}

	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("broker.Close still waiting after 10s for a client that does not read")
		c.Conn.Close() // let it finish, so the test ends
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("broker.Close did not return even after the client left")
		}
	}
}
