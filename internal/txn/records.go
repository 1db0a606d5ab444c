package txn

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// Topic is the internal topic holding transaction state.
const Topic = "__transaction_state"

// `__transaction_state` record versions: key version 0 (the only one),
// value version 1 (flexible, with the tagged previous/next producer ids).
const (
	keyVersion   = 0
	valueVersion = 1
)

func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// txnRecord is m as Kafka's TransactionLog.valueToBytes writes it.
func txnRecord(m *txnMeta) coordinator.Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = m.producerID, m.epoch
	v.TimeoutMillis = int32(m.timeout.Milliseconds())
	v.State = kmsg.TransactionState(m.state)
	v.Topics = m.topics()
	v.LastUpdateTimestamp = m.lastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !m.start.IsZero() {
		v.StartTimestamp = m.start.UnixMilli()
	}
	v.PreviousProducerID, v.NextProducerID = m.prevProducerID, m.nextProducerID
	// A transaction's version is kept (tagged field 2) so that a coordinator
	// loading it after a restart applies the same TV2 retry rules.
	v.ClientTransactionVersion = m.clientTV
	return coordinator.Record{Key: txnKey(m.id), Value: v.AppendTo(nil)}
}

func txnTombstone(id string) coordinator.Record { return coordinator.Record{Key: txnKey(id)} }

// replay applies one record of the log.
func (s *shard) replay(r coordinator.Record) error {
	if r.Batch.Control || len(r.Key) < 2 {
		return nil
	}
	if version := int16(r.Key[0])<<8 | int16(r.Key[1]); version != keyVersion {
		return nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return fmt.Errorf("txn: key: %w", err)
	}
	if r.Value == nil {
		delete(s.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return fmt.Errorf("txn: value of %q: %w", k.TransactionalID, err)
	}
	m := &txnMeta{
		id: k.TransactionalID, producerID: v.ProducerID, prevProducerID: v.PreviousProducerID,
		epoch: v.ProducerEpoch, lastEpoch: noEpoch, nextProducerID: v.NextProducerID,
		clientTV: v.ClientTransactionVersion,
		timeout:  time.Duration(v.TimeoutMillis) * time.Millisecond,
		state:    State(v.State), partitions: map[TopicPartition]struct{}{},
		lastUpdate: time.UnixMilli(v.LastUpdateTimestamp),
	}
	if v.Version == 0 {
		m.prevProducerID, m.nextProducerID, m.clientTV = -1, -1, TV1
	}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	if m.state == Dead {
		delete(s.txns, m.id)
		return nil
	}
	m.lastEpoch = lastEpochAtLoad(m)
	s.txns[m.id] = m
	return nil
}

// lastEpochAtLoad is the epoch before the last bump of a transaction read
// back. The record does not hold it (nor does Kafka's, which loads it as
// none), but a TV2 Prepare* or Complete* was written by a bump of exactly
// one: EndTxn's from the producer's epoch, or the second bump of a fence,
// whose epoch no producer holds. Knowing it keeps a producer that lost
// the answer to its EndTxn in a kill -9 from being fenced when it
// recovers with InitProducerId at the epoch it had (KIP-360), as it is
// when the coordinator did not restart. Any other state (Empty after an
// InitProducerId, which a new producer may have written) keeps none, so
// a zombie is never taken for a retry.
func lastEpochAtLoad(m *txnMeta) int16 {
	switch m.state {
	case PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort:
		if m.clientTV >= TV2 && m.epoch > 0 {
			return m.epoch - 1
		}
	}
	return noEpoch
}
