package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// The single broker of a bbolt store has no one to hand its partitions
// to: ControlledShutdown returns at once and the broker keeps serving
// until Close.
func TestControlledShutdownOfASingleBrokerReturnsAtOnce(t *testing.T) {
	b := brokertest.Start(t, config.Properties{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.ControlledShutdown(ctx); err != nil || time.Since(start) > time.Second {
		t.Fatalf("ControlledShutdown: %v after %v", err, time.Since(start))
	}
	cl := testkit.Client(t, b.Addr(), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(testkit.Context(t, 10*time.Second), &kgo.Record{Topic: "still", Value: []byte("up")}).FirstErr(); err != nil {
		t.Errorf("producing after ControlledShutdown: %v", err)
	}
}
