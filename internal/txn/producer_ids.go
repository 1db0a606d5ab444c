// Package txn holds producer identity (producer ids, reserved in blocks in
// the metadata store) and the transaction coordinator: Kafka's
// TransactionMetadata state machine per transactional id, persisted in
// `__transaction_state` on the coordinator runtime, with the markers that
// end a transaction written through an injected MarkerWriter.
package txn

import (
	"context"
	"sync"

	"kbroker/internal/meta"
)

// producerIDBlock is how many ids one store write reserves (Kafka's
// ProducerIdManager uses blocks of 1000 too).
const producerIDBlock = 1000

// ProducerIDs hands out producer ids from blocks reserved in the metadata
// store, so ids are unique across restarts and brokers. Safe for
// concurrent use.
type ProducerIDs struct {
	store *meta.Store

	mu         sync.Mutex
	nextID, to int64 // the rest of the current block: [nextID, to)
}

// NewProducerIDs allocates from store.
func NewProducerIDs(store *meta.Store) *ProducerIDs { return &ProducerIDs{store: store} }

// Next is a producer id no one has had, reserving a new block when the
// current one is used up.
func (p *ProducerIDs) Next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextID >= p.to {
		first, err := p.store.AllocateProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return 0, err
		}
		p.nextID, p.to = first, first+producerIDBlock
	}
	id := p.nextID
	p.nextID++
	return id, nil
}
