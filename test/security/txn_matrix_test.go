package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func txnIDACL(name string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	return acl(kmsg.ACLResourceTypeTransactionalId, name, op)
}

// withMaxVersion is cl capped at version max of key: kgo sends the newest
// version both sides know, and AddPartitionsToTxn v4+ is the broker's form.
func withMaxVersion(t *testing.T, cl *kgo.Client, key kmsg.Key, max int16) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(key), max)
	pinned, err := kgo.NewClient(append(cl.Opts(), kgo.MaxVersions(vs))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pinned.Close)
	return pinned
}

// initTxn runs InitProducerId for id as cl, waiting out the coordinator's
// creation and load; pid -1 if refused (the refusal of the call under test
// comes first anyway).
func initTxn(t *testing.T, cl *kgo.Client, id string) (int64, int16, int16) {
	var resp *kmsg.InitProducerIDResponse
	code := untilReady(t, func() int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		resp = issue(t, cl, req).(*kmsg.InitProducerIDResponse)
		return resp.ErrorCode
	})
	return resp.ProducerID, resp.ProducerEpoch, code
}

func addPartitionsCall(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	return issue(t, withMaxVersion(t, cl, kmsg.AddPartitionsToTxn, 3), req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
}

// txnMatrixCases are the transactional APIs' rows of the authorization
// matrix, each on a transactional id named after the row's fresh name.
// The first lookup of a transactional id creates __transaction_state, done
// here as admin before any row runs.
func txnMatrixCases(t *testing.T, admin *kgo.Client) map[string]matrixCase {
	if code := untilReady(t, func() int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, "txn", []string{"txn"}
		resp := issue(t, admin, req).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) > 0 {
			return resp.Coordinators[0].ErrorCode
		}
		return resp.ErrorCode
	}); code != 0 {
		t.Fatalf("FindCoordinator(transactional id): %v", kerr.ErrorForCode(code))
	}
	if _, _, code := initTxn(t, admin, "txn"); code != 0 {
		t.Fatalf("InitProducerId(txn): %v", kerr.ErrorForCode(code))
	}
	txnGrant := func(op kmsg.ACLOperation, more ...kmsg.CreateACLsRequestCreation) func(string) []kmsg.CreateACLsRequestCreation {
		return func(name string) []kmsg.CreateACLsRequestCreation {
			return append([]kmsg.CreateACLsRequestCreation{txnIDACL(name, op)}, more...)
		}
	}
	withGroupRead := func(name string) []kmsg.CreateACLsRequestCreation {
		return []kmsg.CreateACLsRequestCreation{txnIDACL(name, kmsg.ACLOperationWrite), groupACL(name, kmsg.ACLOperationRead), acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationRead)}
	}
	// withTxn sets up, as admin, a producer of the row's id with the
	// partition t-0 in an open transaction.
	withTxn := func(t *testing.T, admin *kgo.Client, name string) {
		pid, epoch, code := initTxn(t, admin, name)
		if code != 0 {
			t.Fatalf("InitProducerId(%s): %v", name, kerr.ErrorForCode(code))
		}
		if code := addPartitionsCall(t, admin, name, pid, epoch); code != 0 {
			t.Fatalf("AddPartitionsToTxn(%s): %v", name, kerr.ErrorForCode(code))
		}
	}
	// current is the producer id and epoch of name, as admin sees them.
	current := func(t *testing.T, admin *kgo.Client, name string) (int64, int16) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{name}
		d := issue(t, admin, req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		return d.ProducerID, d.ProducerEpoch
	}
	return map[string]matrixCase{
		"FindCoordinator/transactional": {key: kmsg.FindCoordinator, refused: kerr.TransactionalIDAuthorizationFailed, grants: txnGrant(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				return untilReady(t, func() int16 {
					req := kmsg.NewPtrFindCoordinatorRequest()
					req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, name, []string{name}
					return issue(t, cl, req).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode
				})
			}},
		"AddPartitionsToTxn": {key: kmsg.AddPartitionsToTxn, refused: kerr.TransactionalIDAuthorizationFailed,
			grants: txnGrant(kmsg.ACLOperationWrite, acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationWrite)),
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				pid, epoch, _ := initTxn(t, cl, name)
				return addPartitionsCall(t, cl, name, pid, epoch)
			}},
		// v4+ is the broker's verification (KIP-890): CLUSTER_ACTION only.
		"AddPartitionsToTxn/broker": {key: kmsg.AddPartitionsToTxn, refused: kerr.ClusterAuthorizationFailed,
			grants: onCluster(kmsg.ACLOperationClusterAction), setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				pid, epoch := current(t, admin, name)
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = name, pid, epoch, true
				rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				tx.Topics = append(tx.Topics, rt)
				req.Transactions = append(req.Transactions, tx)
				resp := issue(t, cl, req).(*kmsg.AddPartitionsToTxnResponse)
				if resp.ErrorCode != 0 {
					return resp.ErrorCode
				}
				return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
			}},
		"AddOffsetsToTxn": {key: kmsg.AddOffsetsToTxn, refused: kerr.TransactionalIDAuthorizationFailed, grants: withGroupRead, setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				pid, epoch := current(t, admin, name)
				return untilReady(t, func() int16 {
					req := kmsg.NewPtrAddOffsetsToTxnRequest()
					req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = name, pid, epoch, name
					return issue(t, cl, req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
				})
			}},
		"TxnOffsetCommit": {key: kmsg.TxnOffsetCommit, refused: kerr.TransactionalIDAuthorizationFailed, grants: withGroupRead, setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				pid, epoch := current(t, admin, name)
				return untilReady(t, func() int16 {
					req := kmsg.NewPtrTxnOffsetCommitRequest()
					req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = name, name, pid, epoch, -1
					rt := kmsg.NewTxnOffsetCommitRequestTopic()
					rt.Topic = "t"
					rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
					req.Topics = append(req.Topics, rt)
					return issue(t, cl, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
				})
			}},
		"EndTxn": {key: kmsg.EndTxn, refused: kerr.TransactionalIDAuthorizationFailed, grants: txnGrant(kmsg.ACLOperationWrite), setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				pid, epoch := current(t, admin, name)
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = name, pid, epoch, false
				return issue(t, cl, req).(*kmsg.EndTxnResponse).ErrorCode
			}},
		// Partitions are shown only of topics the caller may DESCRIBE.
		"DescribeTransactions": {key: kmsg.DescribeTransactions, refused: kerr.TransactionalIDAuthorizationFailed,
			grants: txnGrant(kmsg.ACLOperationDescribe, acl(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLOperationDescribe)), setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{name}
				d := issue(t, cl, req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
				if d.ErrorCode == 0 && (d.State != "Ongoing" || len(d.Topics) != 1) {
					t.Errorf("described %+v, want Ongoing with t-0", d)
				}
				return d.ErrorCode
			}},
		// ListTransactions filters silently: "refused" is the id not
		// listed, and then no id at all may be (alice may describe none).
		"ListTransactions": {key: kmsg.ListTransactions, refused: kerr.TransactionalIDAuthorizationFailed, grants: txnGrant(kmsg.ACLOperationDescribe), setup: withTxn,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				resp := issue(t, cl, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
				if resp.ErrorCode != 0 {
					return resp.ErrorCode
				}
				for _, s := range resp.TransactionStates {
					if s.TransactionalID == name {
						return 0
					}
				}
				if len(resp.TransactionStates) > 0 {
					t.Errorf("ListTransactions showed %d ids but not %s: one alice may not describe", len(resp.TransactionStates), name)
				}
				return kerr.TransactionalIDAuthorizationFailed.Code
			}},
	}
}
