package interop

import (
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// migrationProps are groupProps with group.consumer.migration.policy.
func migrationProps(policy string) config.Properties {
	props := maps.Clone(groupProps)
	props["group.consumer.migration.policy"] = policy
	return props
}

// classic is a classic-protocol franz-go member (cooperative-sticky, the
// kgo default).
func classic() kgo.Opt { return kgo.Balancers(kgo.CooperativeStickyBalancer()) }

// groupType is the group's type as ListGroups v5 reports it.
func groupType(t *testing.T, addr, group string) string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, addr))
	if err != nil {
		return ""
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupType
		}
	}
	return ""
}

// Online migration, both ways, as Kafka 4.0 under the default policy
// (bidirectional): a franz-go classic consumer owns a 6-partition topic; a
// KIP-848 consumer joins the same group, which becomes a consumer group
// in which the two split the partitions 3 and 3 (the classic member
// answered from the target assignment); the KIP-848 consumer leaves and
// the group becomes classic again with the classic member owning
// everything. No committed record is delivered again and every record is
// processed across both conversions.
func TestFranzGoGroupMigratesBothWays(t *testing.T) {
	b := brokertest.StartWith(t, testProps(t.TempDir(), migrationProps("bidirectional")))
	addr := b.Addr()
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "mixed", 6, nil)
	l := &ledger{seen: map[string]int{}, committed: map[string]bool{}}

	old := startGroupMember(t, addr, "mixed", "migrating", l, classic())
	defer old.leave()
	produceN(t, addr, "mixed", 0, 300)
	waitFor(t, "the classic member to process 300 records", 30*time.Second, func() bool { return l.distinct() >= 300 })
	if typ := groupType(t, addr, "migrating"); typ != "classic" {
		t.Fatalf("group type %q before the KIP-848 member joined, want classic", typ)
	}

	modern := startGroupMember(t, addr, "mixed", "migrating", l, kgo.ServerSideBalancer())
	waitFor(t, "a consumer group of 2 members with 3 partitions each", 30*time.Second, func() bool {
		state, counts := describe848(t, addr, "migrating")
		return state == "Stable" && len(counts) == 2 && counts[0] == 3 && counts[1] == 3
	})
	if typ := groupType(t, addr, "migrating"); typ != "consumer" {
		t.Fatalf("group type %q with a KIP-848 member, want consumer", typ)
	}
	produceN(t, addr, "mixed", 300, 600)
	waitFor(t, "600 records", 30*time.Second, func() bool { return l.distinct() >= 600 })

	modern.leave()
	waitFor(t, "the group to be classic again", 30*time.Second, func() bool { return groupType(t, addr, "migrating") == "classic" })
	produceN(t, addr, "mixed", 600, 900)
	waitFor(t, "900 records", 30*time.Second, func() bool { return l.distinct() >= 900 })

	l.checkCommittedOnce(t, adm, "migrating", "mixed", 900)
}

// Under policy "disabled" a KIP-848 join to a classic group with members
// is refused with GROUP_ID_NOT_FOUND (franz-go then keeps retrying), and
// the classic member goes on owning every partition of a classic group.
func TestGroupMigrationDisabled(t *testing.T) {
	b := brokertest.StartWith(t, testProps(t.TempDir(), migrationProps("disabled")))
	addr := b.Addr()
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "fixed", 2, nil)
	l := &ledger{seen: map[string]int{}, committed: map[string]bool{}}
	old := startGroupMember(t, addr, "fixed", "pinned", l, classic())
	defer old.leave()
	produceN(t, addr, "fixed", 0, 50)
	waitFor(t, "the classic member to process 50 records", 30*time.Second, func() bool { return l.distinct() >= 50 })

	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "pinned", "a-new-member-id-000000", 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = []string{"fixed"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("KIP-848 join of a classic group under policy disabled: error %d, want GROUP_ID_NOT_FOUND (69)", resp.ErrorCode)
	}
	if typ := groupType(t, addr, "pinned"); typ != "classic" {
		t.Fatalf("group type %q, want classic", typ)
	}
	produceN(t, addr, "fixed", 50, 100)
	waitFor(t, "the classic member to process 100 records", 30*time.Second, func() bool { return l.distinct() >= 100 })
}
