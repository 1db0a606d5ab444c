package security

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func groupACL(name string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	return acl(kmsg.ACLResourceTypeGroup, name, op)
}

// untilReady repeats call while the group coordinator is still being
// created or loaded (the first lookup creates __consumer_offsets).
func untilReady(t *testing.T, call func() int16) int16 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code := call()
		retriable := code == kerr.CoordinatorNotAvailable.Code || code == kerr.CoordinatorLoadInProgress.Code
		if !retriable || time.Now().After(deadline) {
			return code
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func findCoordinator(t *testing.T, cl *kgo.Client, group string) int16 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
	resp := issue(t, cl, req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) > 0 {
		return resp.Coordinators[0].ErrorCode
	}
	return resp.ErrorCode
}

func simpleCommit(t *testing.T, cl *kgo.Client, group string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return issue(t, cl, req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// joined makes cl the only member (and leader) of group: it answers
// MEMBER_ID_REQUIRED, then the join with the id completes the first
// generation. code is the refusal, if any.
func joined(t *testing.T, cl *kgo.Client, group string) (member string, generation int32, code int16) {
	join := func(id string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		return issue(t, cl, req).(*kmsg.JoinGroupResponse)
	}
	var first *kmsg.JoinGroupResponse
	code = untilReady(t, func() int16 { first = join(""); return first.ErrorCode })
	if code != kerr.MemberIDRequired.Code {
		return "", -1, code
	}
	r := join(first.MemberID)
	return r.MemberID, r.Generation, r.ErrorCode
}

// groupMatrixCases are the group APIs' rows of the authorization matrix,
// each on the fresh group the matrix names. Rows that act on an existing
// group set one up with a simple commit as the super user. The first group
// lookup creates __consumer_offsets, done here as admin before any row
// runs (until then every group API answers NOT_COORDINATOR); calls still
// wait out COORDINATOR_NOT_AVAILABLE and LOAD_IN_PROGRESS while its
// coordinators load.
func groupMatrixCases(t *testing.T, admin *kgo.Client) map[string]matrixCase {
	if code := untilReady(t, func() int16 { return findCoordinator(t, admin, "matrix-coordinator") }); code != 0 {
		t.Fatalf("FindCoordinator: %v", kerr.ErrorForCode(code))
	}
	withGroup := func(t *testing.T, admin *kgo.Client, name string) {
		if code := untilReady(t, func() int16 { return simpleCommit(t, admin, name) }); code != 0 {
			t.Fatalf("admin commit for %s: %v", name, kerr.ErrorForCode(code))
		}
	}
	groupGrant := func(op kmsg.ACLOperation, topicOp ...kmsg.ACLOperation) func(string) []kmsg.CreateACLsRequestCreation {
		return func(name string) []kmsg.CreateACLsRequestCreation {
			grants := []kmsg.CreateACLsRequestCreation{groupACL(name, op)}
			for _, top := range topicOp {
				grants = append(grants, acl(kmsg.ACLResourceTypeTopic, "t", top))
			}
			return grants
		}
	}
	ready := func(call func(t *testing.T, cl *kgo.Client, name string) int16) func(t *testing.T, cl *kgo.Client, name string) int16 {
		return func(t *testing.T, cl *kgo.Client, name string) int16 {
			return untilReady(t, func() int16 { return call(t, cl, name) })
		}
	}
	return map[string]matrixCase{
		"FindCoordinator": {key: kmsg.FindCoordinator, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDescribe),
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 { return findCoordinator(t, cl, name) })},
		"JoinGroup": {key: kmsg.JoinGroup, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				_, _, code := joined(t, cl, name)
				return code
			}},
		"SyncGroup": {key: kmsg.SyncGroup, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				member, gen, code := joined(t, cl, name)
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrSyncGroupRequest()
				req.Group, req.MemberID, req.Generation = name, member, gen
				return issue(t, cl, req).(*kmsg.SyncGroupResponse).ErrorCode
			}},
		"Heartbeat": {key: kmsg.Heartbeat, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				member, gen, code := joined(t, cl, name)
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation = name, member, gen
				return issue(t, cl, req).(*kmsg.HeartbeatResponse).ErrorCode
			}},
		"LeaveGroup": {key: kmsg.LeaveGroup, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				member, _, code := joined(t, cl, name)
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Group, req.MemberID = name, member
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = member
				req.Members = append(req.Members, m)
				resp := issue(t, cl, req).(*kmsg.LeaveGroupResponse)
				if resp.ErrorCode == 0 && len(resp.Members) > 0 {
					return resp.Members[0].ErrorCode
				}
				return resp.ErrorCode
			}},
		"ConsumerGroupHeartbeat": {key: kmsg.ConsumerGroupHeartbeat, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead),
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				return consumerJoin(t, cl, name, "member-"+name, nil).ErrorCode
			})},
		"ConsumerGroupDescribe": {key: kmsg.ConsumerGroupDescribe, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDescribe),
			setup: func(t *testing.T, admin *kgo.Client, name string) {
				if code := untilReady(t, func() int16 { return consumerJoin(t, admin, name, "admin-"+name, nil).ErrorCode }); code != 0 {
					t.Fatalf("admin join of %s: %v", name, kerr.ErrorForCode(code))
				}
			},
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrConsumerGroupDescribeRequest()
				req.Groups = []string{name}
				return issue(t, cl, req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode
			})},
		"OffsetCommit": {key: kmsg.OffsetCommit, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationRead, kmsg.ACLOperationRead),
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 { return simpleCommit(t, cl, name) })},
		"OffsetFetch": {key: kmsg.OffsetFetch, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribe),
			setup: withGroup,
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.Group = name
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = name
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				rg.Topics = append(rg.Topics, rt)
				req.Groups = append(req.Groups, rg)
				ot := kmsg.NewOffsetFetchRequestTopic()
				ot.Topic, ot.Partitions = "t", []int32{0}
				req.Topics = append(req.Topics, ot)
				resp := issue(t, cl, req).(*kmsg.OffsetFetchResponse)
				if len(resp.Groups) > 0 {
					g := resp.Groups[0]
					if g.ErrorCode == 0 && g.Topics[0].Partitions[0].Offset != 0 {
						t.Errorf("fetched offset %d, want the admin's commit of 0", g.Topics[0].Partitions[0].Offset)
					}
					return g.ErrorCode
				}
				return resp.ErrorCode
			})},
		"DescribeGroups": {key: kmsg.DescribeGroups, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDescribe),
			setup: withGroup,
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{name}
				return issue(t, cl, req).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode
			})},
		// ListGroups filters silently: "refused" is the group not listed,
		// and then no group at all may be (alice may describe none).
		"ListGroups": {key: kmsg.ListGroups, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDescribe),
			setup: withGroup,
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				resp := issue(t, cl, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
				if resp.ErrorCode != 0 {
					return resp.ErrorCode
				}
				for _, g := range resp.Groups {
					if g.Group == name {
						return 0
					}
				}
				if len(resp.Groups) > 0 {
					t.Errorf("ListGroups showed %d groups but not %s: one alice may not describe", len(resp.Groups), name)
				}
				return kerr.GroupAuthorizationFailed.Code
			})},
		"DeleteGroups": {key: kmsg.DeleteGroups, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDelete),
			setup: withGroup,
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Groups = []string{name}
				return issue(t, cl, req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
			})},
		"OffsetDelete": {key: kmsg.OffsetDelete, refused: kerr.GroupAuthorizationFailed, grants: groupGrant(kmsg.ACLOperationDelete, kmsg.ACLOperationRead),
			setup: withGroup,
			call: ready(func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = name
				rt := kmsg.NewOffsetDeleteRequestTopic()
				rt.Topic = "t"
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
				req.Topics = append(req.Topics, rt)
				resp := issue(t, cl, req).(*kmsg.OffsetDeleteResponse)
				if resp.ErrorCode == 0 && len(resp.Topics) > 0 {
					return resp.Topics[0].Partitions[0].ErrorCode
				}
				return resp.ErrorCode
			})},
	}
}

// consumerJoin is a KIP-848 join (ConsumerGroupHeartbeat v1, epoch 0) of
// member subscribing to topic "t", or to regex when set.
func consumerJoin(t *testing.T, cl *kgo.Client, group, member string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, 0, 30000
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if regex != nil {
		req.SubscribedTopicRegex = regex
	} else {
		req.SubscribedTopicNames = []string{"t"}
	}
	return issue(t, cl, req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// A regex subscription resolves only to the topics the member's principal
// may DESCRIBE: alice with GROUP READ alone is assigned nothing of "t";
// with TOPIC DESCRIBE on it she gets its partition.
func TestConsumerGroupRegexNeedsTopicDescribe(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	if _, err := adminClientOf(admin).CreateTopic(ctxT(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// The first lookup creates __consumer_offsets.
	if code := untilReady(t, func() int16 { return findCoordinator(t, admin, "g-nodescribe") }); code != 0 {
		t.Fatalf("FindCoordinator: %v", kerr.ErrorForCode(code))
	}
	alice := client(t, addr, scram256("alice", alicePass))
	regex := "t"
	assigned := func(group string) int {
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		code := untilReady(t, func() int16 { resp = consumerJoin(t, alice, group, "alice-"+group, &regex); return resp.ErrorCode })
		if code != 0 {
			t.Fatalf("join of %s: %v", group, kerr.ErrorForCode(code))
		}
		n := 0
		if resp.Assignment != nil {
			for _, tp := range resp.Assignment.Topics {
				n += len(tp.Partitions)
			}
		}
		return n
	}
	createACLs := func(acls ...kmsg.CreateACLsRequestCreation) {
		grantAlice(t, admin, matrixCase{grants: func(string) []kmsg.CreateACLsRequestCreation { return acls }}, "", false)
	}
	createACLs(groupACL("g-nodescribe", kmsg.ACLOperationRead), groupACL("g-describe", kmsg.ACLOperationRead))
	if n := assigned("g-nodescribe"); n != 0 {
		t.Fatalf("alice without TOPIC DESCRIBE was assigned %d partitions of t", n)
	}
	createACLs(acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationDescribe))
	if n := assigned("g-describe"); n != 1 {
		t.Fatalf("alice with TOPIC DESCRIBE was assigned %d partitions of t, want 1", n)
	}
}
