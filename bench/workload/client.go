package workload

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// producerOpts are the B1/B3 producer settings from the benchmark plan:
// acks=1 (leader), idempotence off (so acks=1 is allowed and no
// InitProducerID round trip is measured), no linger, no compression.
// Both brokers get exactly these options. With idempotent set, the two
// changes to kgo's defaults are left out: idempotent writes with acks=all
// and up to 5 produce requests in flight per broker, the pipelined shape
// most clients produce in.
func producerOpts(addr, topic string, recordBytes int, idempotent bool) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(bufferedRecords(recordBytes)),
	}
	if idempotent {
		return append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	return append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
}

// withAcks appends acks=all when spec asks for it; kgo applies options in
// order, so it replaces producerOpts' acks=1 and keeps idempotence off.
func withAcks(opts []kgo.Opt, spec Spec) []kgo.Opt {
	if spec.AcksAll {
		return append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	return opts
}

// bufferedRecords keeps the producer's buffer at about 64 MiB (65536 × 1 KiB,
// the setting the reference kfake numbers were taken with) for every record
// size, so 16 KiB records do not queue a gigabyte and 100 B records still
// keep the pipe full.
func bufferedRecords(recordBytes int) int {
	const budget = 64 << 20
	return min(65536, max(1024, budget/max(recordBytes, 1)))
}

// payload returns one record value reused for every record. A static value
// keeps the client's cost per record low (franz-go's bench does the same with
// -static-record); without compression its content does not matter.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}
