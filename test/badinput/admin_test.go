package badinput

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

// TestCreateTopicsWithHugePartitionCount: one request must not make the
// broker take on an unbounded amount of metadata. Kafka's controller
// refuses an operation of more than 10,000 records (a topic is one record
// plus one per partition) with POLICY_VIOLATION, "Unable to perform
// excessively large batch operation.". Without a bound, a single
// CreateTopics or CreatePartitions asking for 2^31-1 partitions would make
// every later Metadata answer list two billion of them.
func TestCreateTopicsWithHugePartitionCount(t *testing.T) {
	addr := startBroker(t, nil)
	s := seed(t, addr)
	c := testkit.Dial(t, addr)

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "huge", 100_000, 1
	req.Topics = append(req.Topics, ct)
	resp := c.RoundTrip(req).(*kmsg.CreateTopicsResponse)
	wantCode(t, "CreateTopics with 100000 partitions", resp.Topics[0].ErrorCode, kerr.PolicyViolation)
	if topicExists(t, addr, "huge") {
		t.Errorf("the topic was created")
	}

	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.Version, grow.TimeoutMillis = 3, 5000
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = s.topic, 1<<31-1
	grow.Topics = append(grow.Topics, gt)
	gresp := c.RoundTrip(grow).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "CreatePartitions to 2^31-1", gresp.Topics[0].ErrorCode, kerr.PolicyViolation)
	s.check(t)
}
