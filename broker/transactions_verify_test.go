package broker_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

// A transactional Produce whose partition cannot be verified because the
// transaction coordinator is gone is answered as Kafka answers it:
// NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to
// the transaction. Underlying error: ...", which every producer retries
// without a metadata refresh, rather than the coordinator's own
// COORDINATOR_NOT_AVAILABLE or NETWORK_EXCEPTION, which older producers do
// not retry on a Produce. Nothing is appended.
func TestProduceAnswersAnUnreachableCoordinatorNotEnoughReplicas(t *testing.T) {
	// The coordinator's partitions stay on its broker: once it stops,
	// no broker coordinates the transaction.
	brokers := twoTxnBrokers(t, map[string]string{"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})
	adm := kadm.NewClient(testkit.Client(t, brokers[0].Addr()))
	testkit.CreateTopic(t, adm, "unverified", 4, nil)
	const id = "coordinator-gone"
	coord, other, partition := coordinatorAndOtherLeader(t, adm, brokers, id, "unverified")
	p, code := initProducer(t, testkit.Dial(t, coord.Addr()), id, 5, 60_000)
	wantCode(t, "InitProducerId", code, nil)
	if err := coord.Close(); err != nil {
		t.Fatal(err)
	}

	rcOther := testkit.Dial(t, other.Addr())
	for _, version := range []int16{11, 12} {
		resp := produceTxnResponse(t, rcOther, version, p, "unverified", partition, 0)
		wantCode(t, "Produce v"+strconv.Itoa(int(version))+" with the coordinator gone", resp.ErrorCode, kerr.NotEnoughReplicas)
		const prefix = "Unable to verify the partition has been added to the transaction. Underlying error: "
		if resp.ErrorMessage == nil || !strings.HasPrefix(*resp.ErrorMessage, prefix) {
			t.Fatalf("Produce v%d error message %v, want %q and the coordinator's error", version, resp.ErrorMessage, prefix)
		}
		if underlying := strings.TrimPrefix(*resp.ErrorMessage, prefix); underlying != "NETWORK_EXCEPTION" && underlying != "COORDINATOR_NOT_AVAILABLE" {
			t.Fatalf("Produce v%d: underlying error %q, want NETWORK_EXCEPTION or COORDINATOR_NOT_AVAILABLE", version, underlying)
		}
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 4
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "unverified"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = partition, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if end := request[*kmsg.ListOffsetsResponse](t, rcOther, lo).Topics[0].Partitions[0]; end.ErrorCode != 0 || end.Offset != 0 {
		t.Fatalf("unverified-%d ends at %+v after the refused produces, want 0", partition, end)
	}
}
