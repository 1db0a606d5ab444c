package broker_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// served opens a connection to addr and waits for the answer to an
// ApiVersions v0 request: a connection held at accept answers nothing.
func served(addr string) error {
	c, err := askVersions(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return readAnswer(c, 30*time.Second)
}

// askVersions opens a connection to addr and sends it ApiVersions v0.
func askVersions(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	// size, api key 18, version 0, correlation id 1, null client id
	frame := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
	if _, err := c.Write(frame); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// readAnswer reads one response frame from c within d.
func readAnswer(c net.Conn, d time.Duration) error {
	_, err := testkit.ReadRawFrame(c, d)
	return err
}

// held opens a connection to addr that must be held at accept: its
// ApiVersions neither answered nor the connection closed for a while. The
// caller reads the answer once it frees a slot.
func held(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := askVersions(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var timeout net.Error
	if err := readAnswer(c, 500*time.Millisecond); !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("a connection beyond the limit: %v, want it held unanswered", err)
	}
	return c
}

// holdServed opens n connections to addr, each served, and keeps them open
// until the test ends.
func holdServed(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var out []net.Conn
	for i := range n {
		c, err := askVersions(addr)
		if err == nil {
			err = readAnswer(c, 5*time.Second)
		}
		if err != nil {
			t.Fatalf("connection %d of %d not served: %v", i+1, n, err)
		}
		t.Cleanup(func() { c.Close() })
		out = append(out, c)
	}
	return out
}

// openAtOnce opens n connections to addr at once and returns how long
// until every one of them was served.
func openAtOnce(t *testing.T, addr string, n int) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- served(addr)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("connection not served: %v", err)
		}
	}
	return time.Since(start)
}

func setBrokerConfig(t *testing.T, adm *kadm.Client, broker int32, key string, value *string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	op := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: value}
	if value == nil {
		op.Op = kadm.DeleteConfig
	}
	var err error
	if broker < 0 {
		_, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{op})
	} else {
		_, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{op}, broker)
	}
	if err != nil {
		t.Fatalf("setting %s: %v", key, err)
	}
}

func ptr(s string) *string { return &s }

// twoListeners starts a broker with an unthrottled PLAINTEXT listener (the
// admin's) and an EXTERNAL one, and returns an admin client.
func twoListeners(t *testing.T, props config.Properties) (plaintext, external string, adm *kadm.Client) {
	all := config.Properties{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
	}
	for k, v := range props {
		all[k] = v
	}
	b := brokertest.Start(t, all)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b.Addrs()[0], b.Addrs()[1], kadm.NewClient(cl)
}

// KIP-612: connections over a listener's max.connection.creation.rate are
// not refused but accepted late, so n connections opened at once at r per
// second take about n/r seconds (less the half-window burst); the other
// listener is not slowed.
func TestListenerConnectionCreationRateDelaysAccepts(t *testing.T) {
	plaintext, external, _ := twoListeners(t, config.Properties{"listener.name.external.max.connection.creation.rate": "10"})
	const n, rate = 20, 10.0
	took := openAtOnce(t, external, n)
	if lo, hi := time.Duration((n-rate/2-1)/rate*0.8*float64(time.Second)), time.Duration(3*n/rate*float64(time.Second)); took < lo || took > hi {
		t.Fatalf("%d connections at %g/s took %v, want within [%v, %v]", n, rate, took, lo, hi)
	}
	if took := openAtOnce(t, plaintext, n); took > time.Second {
		t.Fatalf("the unlimited listener took %v for %d connections", took, n)
	}
}

// A change of the rate, here at the cluster-wide default, applies to the
// accepts already waiting: raising it releases them at once.
func TestConnectionCreationRateChangesLive(t *testing.T) {
	_, external, adm := twoListeners(t, nil)
	setBrokerConfig(t, adm, -1, "listener.name.external.max.connection.creation.rate", ptr("1"))
	done := make(chan time.Duration)
	go func() { done <- openAtOnce(t, external, 10) }() // ~9.5 s at 1/s
	time.Sleep(700 * time.Millisecond)
	setBrokerConfig(t, adm, -1, "listener.name.external.max.connection.creation.rate", ptr("1000"))
	select {
	case took := <-done:
		if took > 4*time.Second {
			t.Fatalf("raising the rate did not release the waiting accepts: %v", took)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("raising the rate did not release the waiting accepts")
	}
	setBrokerConfig(t, adm, -1, "listener.name.external.max.connection.creation.rate", nil)
	if took := openAtOnce(t, external, 20); took > time.Second {
		t.Fatalf("unlimited again, 20 connections took %v", took)
	}
}

// The broker-wide rate counts every listener but the inter-broker one
// (PLAINTEXT by default), which only its own listener rate limits.
func TestBrokerConnectionCreationRateExemptsInterBrokerListener(t *testing.T) {
	plaintext, external, adm := twoListeners(t, config.Properties{"listener.name.plaintext.max.connection.creation.rate": "1000"})
	setBrokerConfig(t, adm, 1, "max.connection.creation.rate", ptr("5"))
	if took := openAtOnce(t, plaintext, 15); took > time.Second {
		t.Fatalf("the inter-broker listener was throttled by the broker-wide rate: %v", took)
	}
	if took := openAtOnce(t, external, 10); took < time.Second {
		t.Fatalf("10 connections at 5/s took only %v", took)
	}
}

func TestConnectionCreationRateValidation(t *testing.T) {
	_, _, adm := twoListeners(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.connection.creation.rate", Value: ptr("-1")}})
	if err == nil {
		err = resp[0].Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("a negative rate: %v, want INVALID_CONFIG", err)
	}
}

// Kafka's ConnectionQuotas: a connection beyond a listener's
// max.connections is not refused; the listener stops accepting until a
// slot frees (waitForConnectionSlot). Closing a connection serves the held
// one, and raising the limit, here at the cluster default, serves a held
// one at once. The other listener is not held back.
func TestListenerMaxConnectionsHoldsAccepts(t *testing.T) {
	plaintext, external, adm := twoListeners(t, nil)
	setBrokerConfig(t, adm, -1, "listener.name.external.max.connections", ptr("2"))
	open := holdServed(t, external, 2)
	waiting := held(t, external)
	if err := served(plaintext); err != nil {
		t.Fatalf("the other listener: %v", err)
	}
	open[0].Close()
	if err := readAnswer(waiting, 5*time.Second); err != nil {
		t.Fatalf("the held connection after one closed: %v, want it served", err)
	}
	waiting = held(t, external)
	setBrokerConfig(t, adm, -1, "listener.name.external.max.connections", ptr("3"))
	if err := readAnswer(waiting, 5*time.Second); err != nil {
		t.Fatalf("the held connection after the limit was raised: %v, want it served", err)
	}
}

// max.connections holds every listener but the inter-broker one (PLAINTEXT
// by default), which Kafka protects so brokers can always connect.
func TestMaxConnectionsExemptsInterBrokerListener(t *testing.T) {
	plaintext, external, adm := twoListeners(t, config.Properties{"listener.name.plaintext.max.connections": "100"})
	// The admin client's own connections on PLAINTEXT fill the single slot.
	setBrokerConfig(t, adm, 1, "max.connections", ptr("1"))
	waiting := held(t, external)
	if took := openAtOnce(t, plaintext, 10); took > 5*time.Second {
		t.Fatalf("the inter-broker listener was held by max.connections: %v", took)
	}
	setBrokerConfig(t, adm, 1, "max.connections", nil)
	if err := readAnswer(waiting, 5*time.Second); err != nil {
		t.Fatalf("the held connection after the limit was removed: %v, want it served", err)
	}
}

// With inter.broker.listener.name unset, security.inter.broker.protocol
// names the inter-broker listener (the one named after the protocol), and
// that is the listener max.connections does not hold, as in Kafka: here
// SASL_PLAINTEXT, while PLAINTEXT is held like any other.
func TestMaxConnectionsExemptsTheListenerNamedBySecurityInterBrokerProtocol(t *testing.T) {
	b := brokertest.Start(t, config.Properties{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";`,
		"security.inter.broker.protocol":                      "SASL_PLAINTEXT",
		"max.connections":                                     "1",
		// Only the broker-wide limit is under test.
		"listener.name.plaintext.max.connections":      "100",
		"listener.name.sasl_plaintext.max.connections": "100",
	})
	plaintext, interBroker := b.Addrs()[0], b.Addrs()[1]
	holdServed(t, plaintext, 1)
	held(t, plaintext)
	if took := openAtOnce(t, interBroker, 5); took > 5*time.Second {
		t.Fatalf("the inter-broker listener was held by max.connections: %v", took)
	}
}

// Kafka refuses to start a broker whose inter-broker listener is not one
// it advertises: the other brokers could not reach it there.
func TestInterBrokerListenerNotAdvertisedFailsStartup(t *testing.T) {
	for _, c := range []struct {
		name  string
		props config.Properties
		want  string
	}{
		{"inter.broker.listener.name names no listener", config.Properties{"inter.broker.listener.name": "NOWHERE"},
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT,INTERNAL"},
		{"a listener that is not advertised", config.Properties{"inter.broker.listener.name": "INTERNAL", "advertised.listeners": "PLAINTEXT://localhost:9092"},
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT"},
		{"security.inter.broker.protocol names no listener", config.Properties{"security.inter.broker.protocol": "SSL"},
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT,INTERNAL"},
	} {
		props := config.Properties{
			"listeners":                      "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
			"log.dirs":                       t.TempDir(),
		}
		for k, v := range c.props {
			props[k] = v
		}
		b, err := broker.New(props)
		if err == nil {
			if err = b.Start(); err == nil {
				b.Close()
			}
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: start error %v, want %q", c.name, err, c.want)
		}
	}
}
