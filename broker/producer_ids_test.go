package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// initProducerID sends InitProducerId (to the transaction coordinator when
// transactionalID is set; kgo finds it) and returns the id given.
func initProducerID(t *testing.T, cl *kgo.Client, transactionalID *string) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = transactionalID, 60000
	resp, err := req.RequestWith(testkit.Context(t, 30*time.Second), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId (transactional id %v): %v %v", transactionalID, resp, err)
	}
	return resp.ProducerID
}

// The idempotent and the transactional InitProducerId draw from the
// broker's one allocator, as Kafka's ProducerIdManager serves both: their
// ids follow each other in one reserved block, where two allocators would
// each have reserved a block of their own. After a restart over the same
// metadata the broker reserves a new block, past every id it gave.
func TestBothInitProducerIDPathsShareOneAllocator(t *testing.T) {
	b := brokertest.Start(t, nil)
	props := b.Config().Props
	cl := testkit.Client(t, b.Addr())
	idempotent := initProducerID(t, cl, nil)
	transactional := initProducerID(t, cl, kmsg.StringPtr("tx"))
	again := initProducerID(t, cl, nil)
	if transactional != idempotent+1 || again != transactional+1 {
		t.Errorf("ids idempotent %d, transactional %d, idempotent %d: want consecutive ids from one block", idempotent, transactional, again)
	}

	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartWith(t, props)
	cl = testkit.Client(t, b.Addr())
	for _, id := range []int64{initProducerID(t, cl, kmsg.StringPtr("tx2")), initProducerID(t, cl, nil)} {
		if id <= again {
			t.Errorf("after the restart: producer id %d, want one past %d", id, again)
		}
	}
}
