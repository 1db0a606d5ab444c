package admin

import "testing"

// The positive cases of find-hanging cannot be made on a healthy broker
// (its coordinator always writes the markers of the partitions it added),
// so the rule is pinned here: an open transaction is hanging unless its
// producer's transactional id is known and lists the partition.
func TestHangingAmongKeepsTransactionsNoCoordinatorWillEnd(t *testing.T) {
	t0 := TopicPartition{Topic: "t", Partition: 0}
	t1 := TopicPartition{Topic: "t", Partition: 1}
	candidates := []HangingTransaction{
		{TopicPartition: t0, ProducerState: ProducerState{ProducerID: 1}}, // id a, t-0 in its transaction: live
		{TopicPartition: t1, ProducerState: ProducerState{ProducerID: 1}}, // id a, t-1 not in it: hanging
		{TopicPartition: t0, ProducerState: ProducerState{ProducerID: 2}}, // no id lists producer 2: hanging
		{TopicPartition: t0, ProducerState: ProducerState{ProducerID: 3}}, // id c is TRANSACTIONAL_ID_NOT_FOUND: hanging
	}
	idOf := map[int64]string{1: "a", 3: "c"}
	described := map[string]*TransactionDescription{"a": {TransactionalID: "a", Partitions: []TopicPartition{t0}}}
	got := hangingAmong(candidates, idOf, described)
	if len(got) != 3 || got[0] != candidates[1] || got[1] != candidates[2] || got[2] != candidates[3] {
		t.Fatalf("hanging %+v, want the last three candidates", got)
	}
}
