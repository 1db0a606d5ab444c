package security

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// produceConsume writes and reads back one record, proving the connection
// authenticated and works.
func produceConsume(t *testing.T, addr string, mech sasl.Mechanism, topic string, extra ...kgo.Opt) {
	t.Helper()
	cl := client(t, addr, mech, append([]kgo.Opt{kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestRetries(5), kgo.RetryTimeout(10 * time.Second)}, extra...)...)
	ctx := ctxT(t)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if fs.NumRecords() != 1 {
		t.Fatalf("fetched %d records, want 1", fs.NumRecords())
	}
}

func TestSASLFranzGo(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	for name, mech := range map[string]sasl.Mechanism{
		"plain":         plainAuth("alice", alicePass),
		"scram-sha-256": scram256("alice", alicePass),
		"scram-sha-512": scram512("alice", alicePass),
	} {
		t.Run(name, func(t *testing.T) { produceConsume(t, addr, mech, "t-"+name) })
	}
}

func TestSASLWrongPasswordFails(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	for name, mech := range map[string]sasl.Mechanism{
		"plain":         plainAuth("alice", "wrong"),
		"scram-sha-256": scram256("alice", "wrong"),
		"unknown user":  scram512("mallory", "x"),
	} {
		t.Run(name, func(t *testing.T) {
			err := client(t, addr, mech).Ping(ctxT(t))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
}

func TestSASLMechanismNotEnabled(t *testing.T) {
	addr := start(t, saslProps(config.Properties{"sasl.enabled.mechanisms": "SCRAM-SHA-512"})).Addr()
	err := client(t, addr, plainAuth("alice", alicePass)).Ping(ctxT(t))
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("err = %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	// Raw: the response lists the enabled mechanisms, then the broker closes.
	c := testkit.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	resp := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "SCRAM-SHA-512" {
		t.Fatalf("handshake = %d %v", resp.ErrorCode, resp.SupportedMechanisms)
	}
	c.ExpectClosed(testkit.IOTimeout)
}

func TestRequestBeforeAuthenticationClosesConnection(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	c := testkit.Dial(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	if resp := c.RoundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions before auth: %d", resp.ErrorCode)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.Send(md)
	c.ExpectClosed(testkit.IOTimeout)

	// SaslAuthenticate without a handshake: ILLEGAL_SASL_STATE, then closed.
	c = testkit.Dial(t, addr)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	au.SASLAuthBytes = []byte("\x00alice\x00" + alicePass)
	if resp := c.RoundTrip(au).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate without handshake = %d", resp.ErrorCode)
	}
	c.ExpectClosed(testkit.IOTimeout)
}

func TestSASLBadCredentialsAnswerThenClose(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	c := testkit.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if resp := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("handshake: %d", resp.ErrorCode)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	au.SASLAuthBytes = []byte("\x00alice\x00nope")
	resp := c.RoundTrip(au).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Invalid username or password") {
		t.Fatalf("authenticate = %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	c.ExpectClosed(testkit.IOTimeout)
}

// SaslHandshake v0: the token travels as a bare frame and so does the reply.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	c := testkit.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	if resp := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("handshake v0: %d", resp.ErrorCode)
	}
	c.WriteFrame([]byte("\x00alice\x00" + alicePass))
	reply, err := c.ReadRawFrame()
	if err != nil || len(reply) != 0 {
		t.Fatalf("raw reply = %q, %v", reply, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if resp := c.RoundTrip(md).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("metadata after v0 auth: %+v", resp)
	}

	// A bad raw token closes the connection (there is no response to carry an error).
	c = testkit.Dial(t, addr)
	c.RoundTrip(hs)
	c.WriteFrame([]byte("\x00alice\x00wrong"))
	c.ExpectClosed(testkit.IOTimeout)
}

// connections.max.reauth.ms (KIP-368): franz-go re-authenticates on the same
// connection before the lifetime ends and keeps working; a client that
// does not is cut off.
func TestSASLReauthentication(t *testing.T) {
	b := start(t, saslProps(config.Properties{"connections.max.reauth.ms": "2500"}))
	addr := b.Addr()
	cl := client(t, addr, scram256("alice", alicePass), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(3))
	ctx := ctxT(t)
	deadline := time.Now().Add(6 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce %d after %v: %v", n, time.Until(deadline), err)
		}
		time.Sleep(300 * time.Millisecond)
	}

	c := testkit.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	c.RoundTrip(hs)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	au.SASLAuthBytes = []byte("\x00alice\x00" + alicePass)
	resp := c.RoundTrip(au).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 2500 {
		t.Fatalf("authenticate = %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	// No re-authentication before the lifetime ends: the next request closes the connection.
	time.Sleep(2600 * time.Millisecond)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.Send(md)
	c.ExpectClosed(testkit.IOTimeout)
}

func TestReauthenticationMustKeepMechanismAndPrincipal(t *testing.T) {
	addr := start(t, saslProps(config.Properties{"connections.max.reauth.ms": "60000"})).Addr()
	auth := func(c *testkit.RawConn, mech, token string) (int16, int16) {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, mech
		h := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse)
		if h.ErrorCode != 0 {
			return h.ErrorCode, 0
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version = 1
		au.SASLAuthBytes = []byte(token)
		return 0, c.RoundTrip(au).(*kmsg.SASLAuthenticateResponse).ErrorCode
	}
	c := testkit.Dial(t, addr)
	if h, a := auth(c, "PLAIN", "\x00alice\x00"+alicePass); h != 0 || a != 0 {
		t.Fatal(h, a)
	}
	if h, a := auth(c, "PLAIN", "\x00alice\x00"+alicePass); h != 0 || a != 0 {
		t.Fatalf("re-authentication: %d %d", h, a)
	}
	if h, a := auth(c, "PLAIN", "\x00admin\x00"+adminPass); a != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as another principal: %d %d", h, a)
	}
	c.ExpectClosed(testkit.IOTimeout)

	c = testkit.Dial(t, addr)
	auth(c, "PLAIN", "\x00alice\x00"+alicePass)
	if h, _ := auth(c, "SCRAM-SHA-256", ""); h != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("re-authentication with another mechanism: %d", h)
	}
	c.ExpectClosed(testkit.IOTimeout)
}

// PLAINTEXT and SASL listeners side by side: each keeps its own rules.
func TestSeveralListeners(t *testing.T) {
	b := start(t, saslProps(config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}))
	addrs := b.Addrs()
	produceConsume(t, addrs[0], nil, "plain-listener")
	produceConsume(t, addrs[1], scram512("alice", alicePass), "sasl-listener")
	c := testkit.Dial(t, addrs[0])
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if resp := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on PLAINTEXT = %d", resp.ErrorCode)
	}
}
