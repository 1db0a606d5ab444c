package config

import (
	"strings"
	"testing"
)

// The transaction coordinator applies these keys (txn.ConfigFrom), so
// their documentation must not call them unneeded, as it did before the
// coordinator existed; the rest of Kafka's transaction.* keys still say why
// kbroker has no use for them.
func TestTransactionKeysDescribeWhatTheCoordinatorDoes(t *testing.T) {
	applied := []string{
		"transaction.state.log.num.partitions", "transaction.state.log.segment.bytes", "transaction.max.timeout.ms",
		"transactional.id.expiration.ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
		"transaction.remove.expired.transaction.cleanup.interval.ms",
		"transaction.state.log.replication.factor", "transaction.state.log.min.isr",
		// Read since replication and KIP-848 landed (issues 15 and 17).
		"offsets.topic.replication.factor", "offsets.commit.timeout.ms", "replica.lag.time.max.ms",
		"replica.high.watermark.checkpoint.interval.ms", "controlled.shutdown.enable", "auto.leader.rebalance.enable",
		"group.consumer.session.timeout.ms", "group.consumer.migration.policy",
	}
	for _, name := range applied {
		d := Brokers.Lookup(name)
		if d == nil {
			t.Errorf("%s: not in the broker catalog", name)
			continue
		}
		if strings.Contains(d.Doc, "does not need it") || strings.Contains(d.Doc, "no transaction coordinator") {
			t.Errorf("%s is applied but documented as unneeded: %q", name, d.Doc)
		}
	}
	for _, name := range []string{"transaction.state.log.load.buffer.size", "transaction.partition.verification.enable"} {
		d := Brokers.Lookup(name)
		if d == nil || !strings.Contains(d.Doc, "does not need it") || strings.Contains(d.Doc, "no transaction coordinator") {
			t.Errorf("%s: documentation %q should say why kbroker does not need it, now that a coordinator exists", name, d.Doc)
		}
	}
}
