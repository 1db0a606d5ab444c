// Package testkit is what kbroker's tests share on the client side of a
// real broker: bounded contexts, franz-go clients closed with the test,
// topic creation that fails the test on refusal, polling, and a raw Kafka
// connection for the bytes real clients never send (rawconn.go); and on the
// service side, the store and logs a service package's tests stand on
// without a broker (store.go, services.go).
//
// Starting brokers stays where it was: broker/brokertest runs them
// in-process, internal/testbin runs the built kbroker binary. Both kinds of
// test then talk to the broker through this package.
package testkit

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Context is a context bounded by d, cancelled when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Client is a franz-go client seeded with addr (none when addr is empty:
// opts then name the seeds), closed when the test ends.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	if addr != "" {
		opts = append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates topic with partitions, replication factor 1 and
// configs (nil: none), and fails the test unless the broker says yes.
func CreateTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(Context(t, 10*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// WaitFor polls cond every 50ms until it holds (true) or d passes (false).
func WaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClosedByPeer reports whether err means the other side closed the
// connection.
func ClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
