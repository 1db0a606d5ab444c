package meta

import (
	"context"
	"encoding/binary"
)

const keyNextProducerID = "producer_ids/next"

// AllocateProducerIDs reserves count consecutive producer ids and returns
// the first. Ids are never reused, even across restarts, because a reused id
// could match an old producer's sequence state.
func (s *Store) AllocateProducerIDs(ctx context.Context, count int64) (int64, error) {
	var first int64
	err := s.Update(ctx, func(tx Tx) error {
		first = 0
		if v, ok := tx.Get(keyNextProducerID); ok && len(v) == 8 {
			first = int64(binary.BigEndian.Uint64(v))
		}
		tx.Put(keyNextProducerID, binary.BigEndian.AppendUint64(nil, uint64(first+count)))
		return nil
	})
	return first, err
}
