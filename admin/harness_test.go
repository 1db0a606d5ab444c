package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
)

// target is a broker the admin tests run against: kbroker over TCP, or
// franz-go's kfake for the APIs it implements.
type target struct {
	name  string
	kfake bool
	// start runs the broker and returns its bootstrap address; props are
	// kbroker's server.properties additions (kfake ignores them).
	start func(t *testing.T, props config.Properties) string
}

var targets = []target{
	{name: "kbroker", start: func(t *testing.T, props config.Properties) string {
		all := config.Properties{"auto.create.topics.enable": "false"}
		for k, v := range props {
			all[k] = v
		}
		return brokertest.Start(t, all).Addr()
	}},
	{name: "kfake", kfake: true, start: func(t *testing.T, _ config.Properties) string {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}},
}

// forEachTarget runs fn against every target with a connected client.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg target, c *admin.Client)) {
	forEachTargetWith(t, nil, fn)
}

// withAuthorizer turns kbroker's authorizer on, with the PLAINTEXT
// principal (User:ANONYMOUS) as super user so the tests may do anything.
var withAuthorizer = config.Properties{
	"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":           "User:ANONYMOUS",
}

func forEachTargetWith(t *testing.T, props config.Properties, fn func(t *testing.T, tg target, c *admin.Client)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			c := connect(t, tg.start(t, props))
			fn(t, tg, c)
		})
	}
}

func connect(t *testing.T, addr string, opts ...kgo.Opt) *admin.Client {
	t.Helper()
	c, err := admin.New(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// skipUnlessAPI skips when the broker does not advertise an API (another
// engineer may not have landed it yet).
func skipUnlessAPI(t *testing.T, c *admin.Client, key int16, what string) {
	t.Helper()
	ok, err := c.Supports(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skipf("broker does not advertise API key %d (%s) yet", key, what)
	}
}

func mustCreate(t *testing.T, c *admin.Client, topics ...admin.NewTopic) {
	t.Helper()
	rs, err := c.CreateTopics(ctxT(t), topics, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.All(); err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %s", err, want.Message)
	}
}
