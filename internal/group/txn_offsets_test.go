package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) txnCommit(group string, pid int64, offset int64) int16 {
	h.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = 3, "tx", group, pid, 0
	req.Generation = -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = "t"
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return h.c.TxnCommit(context.Background(), req)[0].Partitions[0].ErrorCode
}

// stable is the offset OffsetFetch with RequireStable answers, or its error.
func (h *harness) stable(group string) (int64, int16) {
	h.t.Helper()
	got, code := h.c.FetchStable(context.Background(), group, []FetchTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	if code != 0 {
		h.t.Fatalf("fetch: error %d", code)
	}
	return got[0].Partitions[0].Offset, got[0].Partitions[0].ErrorCode
}

func (h *harness) marker(pid int64, commit bool) {
	h.t.Helper()
	if err := h.c.CompleteTransaction(context.Background(), 0, pid, 0, commit, 0); err != nil {
		h.t.Fatal(err)
	}
}

// A transactional commit is invisible until its commit marker, dropped by
// an abort marker, and OffsetFetch with RequireStable waits for it
// (UNSTABLE_OFFSET_COMMIT); all of it comes back the same from the log.
func TestTransactionalOffsetsSettleOnTheirMarker(t *testing.T) {
	h := newHarness(t, testConfig())
	if code := h.commit(2, "g", "", -1, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := h.txnCommit("g", 7, 10); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	if got := h.fetched("g"); got != 5 {
		t.Fatalf("without RequireStable: %d, want the last committed 5", got)
	}
	if _, code := h.stable("g"); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("RequireStable with a pending commit: %v", kerr.ErrorForCode(code))
	}
	h.restart(testConfig()) // pending offsets are replayed from the transactional batch
	if _, code := h.stable("g"); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("RequireStable after a restart: %v", kerr.ErrorForCode(code))
	}
	h.marker(7, true)
	if got, code := h.stable("g"); got != 10 || code != 0 {
		t.Fatalf("after the commit marker: %d, %v", got, kerr.ErrorForCode(code))
	}
	if code := h.txnCommit("g", 8, 20); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	h.marker(8, false)
	if got, code := h.stable("g"); got != 10 || code != 0 {
		t.Fatalf("after the abort marker: %d, %v", got, kerr.ErrorForCode(code))
	}
	h.restart(testConfig())
	if got, code := h.stable("g"); got != 10 || code != 0 {
		t.Fatalf("replayed: %d, %v (the commit must stay, the abort must not apply)", got, kerr.ErrorForCode(code))
	}
}

// KIP-447: a transactional commit naming a generation is checked against
// the group; one without member and generation is accepted into an active
// group, where a plain commit is not.
func TestTransactionalCommitChecksTheGeneration(t *testing.T) {
	h := newHarness(t, testConfig())
	if code := h.txnCommit("g", 7, 1); code != 0 {
		t.Fatalf("into a new group: %v", kerr.ErrorForCode(code))
	}
	a, _ := h.stableTwoMembers("active")
	if code := h.txnCommit("active", 7, 1); code != 0 {
		t.Fatalf("without a generation into an active group: %v", kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID = 3, "tx", "active", 9
	req.MemberID, req.Generation = a, 99
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	if code := h.c.TxnCommit(context.Background(), req)[0].Partitions[0].ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Fatalf("an old generation: %v", kerr.ErrorForCode(code))
	}
}

// Offsets a transaction is about to commit keep their partition's offset
// and their group from expiring (Kafka's offset expiration skips them).
func TestPendingTransactionalOffsetsDoNotExpire(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsRetention, cfg.RetentionCheck = 10*time.Minute, time.Minute
	h := newHarness(t, cfg)
	if code := h.commit(2, "g", "", -1, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := h.txnCommit("g", 7, 10); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	h.advance(15 * time.Minute)
	if got := h.fetched("g"); got != 5 {
		t.Fatalf("the committed offset under a pending one expired: %d", got)
	}
	h.marker(7, true)
	if got := h.fetched("g"); got != 10 {
		t.Fatalf("after the commit marker: %d", got)
	}
}
