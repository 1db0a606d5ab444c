package txn

import (
	"context"
	"testing"

	"kbroker/internal/testkit"
)

// Ids are never handed out twice: not across the end of a reserved block,
// and not by a second allocator over the same store (another broker, or
// this one after a restart), which starts from a block of its own.
func TestProducerIDsAreUniqueAcrossBlocksAndAllocators(t *testing.T) {
	store := testkit.BoltStore(t)
	ctx := context.Background()
	seen := map[int64]bool{}
	take := func(p *ProducerIDs, n int) {
		t.Helper()
		for range n {
			id, err := p.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if id < 0 || seen[id] {
				t.Fatalf("producer id %d handed out twice (or negative)", id)
			}
			seen[id] = true
		}
	}
	first := NewProducerIDs(store)
	take(first, producerIDBlock+5) // into a second block
	second := NewProducerIDs(store)
	take(second, 10)
	take(first, 10)
}
