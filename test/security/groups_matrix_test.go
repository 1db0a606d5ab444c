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

// groupMatrixCases are the group APIs' rows of the authorization matrix.
// admin prepares the groups some of them act on: empty groups with an
// offset, made by simple commits.
func groupMatrixCases(t *testing.T, admin *kgo.Client) map[kmsg.Key]matrixCase {
	// The first lookup creates __consumer_offsets; commits are answered
	// once its coordinators load.
	if code := untilReady(t, func() int16 { return findCoordinator(t, admin, "mg-describe") }); code != 0 {
		t.Fatalf("FindCoordinator: %v", kerr.ErrorForCode(code))
	}
	for _, g := range []string{"mg-describe", "mg-list", "mg-delete", "mg-offsets"} {
		if code := untilReady(t, func() int16 { return simpleCommit(t, admin, g) }); code != 0 {
			t.Fatalf("admin commit for %s: %v", g, kerr.ErrorForCode(code))
		}
	}
	return map[kmsg.Key]matrixCase{
		kmsg.FindCoordinator: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-find", kmsg.ACLOperationDescribe)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				return findCoordinator(t, cl, "mg-find")
			}},
		kmsg.JoinGroup: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-join", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				_, _, code := joined(t, cl, "mg-join")
				return code
			}},
		kmsg.SyncGroup: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-sync", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				member, gen, code := joined(t, cl, "mg-sync")
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrSyncGroupRequest()
				req.Group, req.MemberID, req.Generation = "mg-sync", member, gen
				return issue(t, cl, req).(*kmsg.SyncGroupResponse).ErrorCode
			}},
		kmsg.Heartbeat: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-heartbeat", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				member, gen, code := joined(t, cl, "mg-heartbeat")
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation = "mg-heartbeat", member, gen
				return issue(t, cl, req).(*kmsg.HeartbeatResponse).ErrorCode
			}},
		kmsg.LeaveGroup: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-leave", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				member, _, code := joined(t, cl, "mg-leave")
				if code != 0 {
					return code
				}
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Group, req.MemberID = "mg-leave", member
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = member
				req.Members = append(req.Members, m)
				resp := issue(t, cl, req).(*kmsg.LeaveGroupResponse)
				if resp.ErrorCode == 0 && len(resp.Members) > 0 {
					return resp.Members[0].ErrorCode
				}
				return resp.ErrorCode
			}},
		kmsg.OffsetCommit: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{
			groupACL("mg-commit", kmsg.ACLOperationRead), acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 { return simpleCommit(t, cl, "mg-commit") }},
		kmsg.OffsetFetch: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{
			groupACL("mg-offsets", kmsg.ACLOperationDescribe), acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationDescribe)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.Group = "mg-offsets"
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = "mg-offsets"
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
			}},
		kmsg.DescribeGroups: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-describe", kmsg.ACLOperationDescribe)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{"mg-describe"}
				return issue(t, cl, req).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode
			}},
		// ListGroups filters silently: "refused" is the group not listed.
		kmsg.ListGroups: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-list", kmsg.ACLOperationDescribe)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				resp := issue(t, cl, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
				if resp.ErrorCode != 0 {
					return resp.ErrorCode
				}
				for _, g := range resp.Groups {
					if g.Group != "mg-list" {
						t.Errorf("ListGroups showed %s, which alice may not describe", g.Group)
					}
				}
				if len(resp.Groups) == 1 {
					return 0
				}
				return kerr.GroupAuthorizationFailed.Code
			}},
		kmsg.DeleteGroups: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{groupACL("mg-delete", kmsg.ACLOperationDelete)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Groups = []string{"mg-delete"}
				return issue(t, cl, req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
			}},
		kmsg.OffsetDelete: {refused: kerr.GroupAuthorizationFailed, acls: []kmsg.CreateACLsRequestCreation{
			groupACL("mg-offsets", kmsg.ACLOperationDelete), acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationRead)},
			call: func(t *testing.T, cl *kgo.Client) int16 {
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = "mg-offsets"
				rt := kmsg.NewOffsetDeleteRequestTopic()
				rt.Topic = "t"
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
				req.Topics = append(req.Topics, rt)
				resp := issue(t, cl, req).(*kmsg.OffsetDeleteResponse)
				if resp.ErrorCode == 0 && len(resp.Topics) > 0 {
					return resp.Topics[0].Partitions[0].ErrorCode
				}
				return resp.ErrorCode
			}},
	}
}
